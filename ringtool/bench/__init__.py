"""Benchmarks behind ``ringtool bench``. Each module NAME here has
``run(*, repeats: int, quick: bool) -> list[dict]`` returning JSON-able result rows
(``{"bench": ..., "consumer": ..., "records": N, "ns_per_record": x}`` and extras)."""

BENCHMARKS = ("ringbuf", "perfbuf", "merge", "kmes", "export", "trace", "peers", "primitives")
