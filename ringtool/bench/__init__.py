"""Benchmarks behind ``ringtool bench``. Each benchmark module here has
``run(*, repeats: int, quick: bool) -> list[dict]`` returning JSON-able result rows
(``{"bench": ..., "consumer": ..., "records": N, "ns_per_record": x}`` and extras);
`bench/command.py` lists them.

Layer: bench (the top one; docs/ARCHITECTURE.md).
"""

BENCHMARKS = ("ringbuf", "perfbuf", "merge", "kmes", "export", "trace", "peers", "primitives")
