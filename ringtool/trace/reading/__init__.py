"""What `ringtool trace` reads from the kernel: the table of sources
(`trace/reading/sources.py`), the session over the per-CPU ring group
(`trace/reading/session.py`), the net source and its TC filters, the marker ring, the
growing rings and their policy, the options, filters and `-D` flags, the ordered merge,
the cost.

Layer: trace | diagnostics (docs/ARCHITECTURE.md).
"""
