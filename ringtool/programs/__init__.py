"""BPF programs in ``bpf/`` and how they are compiled, attached and decoded.

Layer: readers | programs | kmes | event (docs/ARCHITECTURE.md).
"""
