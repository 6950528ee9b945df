"""Layer 4: BPF programs in ``bpf/`` and how they are compiled, attached and decoded."""
