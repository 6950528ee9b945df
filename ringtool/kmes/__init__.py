"""KMES: per-CPU double-mapped ring buffers in the KMES format (docs/kmes.md).

``layout`` (metadata page, event header), ``buffer`` (sealed memfds, mappings),
``writer`` (docs/kmes.md section 6), ``reader`` (section 7), ``wait`` (section 8),
``attach`` (attach protocol v2, section 11), ``boot`` (boot buffer, section 9),
``config`` (capacity registry, section 10). The bridge that routes events into per-CPU
writers, resizes and serves attach is :mod:`ringtool.bridge.core`.

Layer: readers | programs | kmes | event (docs/ARCHITECTURE.md).
"""
