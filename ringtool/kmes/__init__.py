"""KMES (KMES seed §5.1): per-CPU double-mapped ring buffers in the exact KMES format.

``buffer`` (sealed memfds, mappings), ``writer`` (§5.1.7), ``reader`` (§5.1.8),
``attach`` (DESIGN.md attach protocol), ``boot`` (§5.1.2 boot buffer), ``bridge_core``
(routes events into per-CPU writers, resize, serves attach).
"""
