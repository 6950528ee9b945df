"""``ringtool bench merge``: the default and the optimized ordered merge, same run.

Synthetic case (no root needed): N events with random increasing timestamps spread at
random over K in-memory buffers (each buffer sorted, all data present), merged by
both algorithms; K = 2, 8, 64. Rows ``{"bench": "merge-K", "consumer": "default" |
"optimized", "records": N, "ns_per_record": x, "ratio": x / default}``.

Real-ring case (root + BCC): a per-CPU ring buffer group (one RINGBUF per online CPU)
filled by bpf/percpu_ringbuf_test.c on every CPU (BPF_PROG_TEST_RUN, not timed), then
drained through :func:`ringtool.readers.ringbuf_group.merge_rings` (copy out, extract
the u64 timestamp, merge). Rows ``"merge-ring-B"`` (B rings) with the same consumers
plus ``"unordered"``: the same copy-out and timestamp extraction, no merge. When the
kernel part can't run, one row says why (``"skipped"``).

Each number is the median of ``repeats`` runs; the garbage collector is off while a
run is timed.
"""

from __future__ import annotations

import functools
import gc
import os
import random
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from ringtool.merge import Algorithm, ListSource, merge_sources, u64_at

KS = (2, 8, 64)
ALGORITHMS: tuple[Algorithm, ...] = ("default", "optimized")


def synthetic(k: int, n: int, *, seed: int = 6) -> list[list[tuple[int, None]]]:
    """``n`` events, increasing timestamps (ns, ~1 µs apart), at random over ``k``
    buffers."""
    rnd = random.Random(seed)
    bufs: list[list[tuple[int, None]]] = [[] for _ in range(k)]
    ts = 1_000_000_000
    for _ in range(n):
        ts += rnd.randrange(1, 2000)
        bufs[rnd.randrange(k)].append((ts, None))
    return bufs


def _timed(run: Callable[[], int]) -> tuple[int, int]:
    """(records, ns) of one call of ``run`` (which returns the records it handled)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter_ns()
        got = run()
        return got, time.perf_counter_ns() - t0
    finally:
        if enabled:
            gc.enable()


def _drain_count(m: Any) -> int:
    n = 0
    for _ in m:
        n += 1
    return n


def _copy_all(rings: Any, ts_of: Callable[[bytes], int]) -> int:
    """The unordered baseline: copy out every ring and extract the timestamps."""
    got = 0
    for r in rings:
        while recs := r.copy_out(256):
            got += len([(ts_of(x), x) for x in recs])
    return got


def _synthetic_rows(k: int, n: int, repeats: int) -> list[dict[str, Any]]:
    bufs = synthetic(k, n)
    per_alg: dict[str, float] = {}
    for algorithm in ALGORITHMS:
        samples = []
        for _ in range(repeats):
            m = merge_sources([ListSource(b) for b in bufs], algorithm=algorithm)
            got, ns = _timed(functools.partial(_drain_count, m))
            if got != n:
                raise RuntimeError(f"merge-{k} {algorithm}: {got} of {n} events")
            samples.append(ns / n)
        per_alg[algorithm] = statistics.median(samples)
    base = per_alg["default"]
    return [
        {
            "bench": f"merge-{k}",
            "consumer": algorithm,
            "records": n,
            "ns_per_record": round(per_alg[algorithm], 1),
            "ratio": round(per_alg[algorithm] / base, 3),
        }
        for algorithm in ALGORITHMS
    ]


def _ring_rows(per_cpu: int, repeats: int) -> list[dict[str, Any]]:
    import bcc

    from ringtool.kernel import bpf
    from ringtool.readers.ringbuf_group import BPF_INCLUDE_DIR, RingBufGroup, merge_rings

    cpus = sorted(os.sched_getaffinity(0))
    ring_bytes = 1 << max(16, (per_cpu * 40).bit_length() + 1)
    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=ring_bytes, cpus=cpus)
    src = str(BPF_INCLUDE_DIR / "percpu_ringbuf_test.c").encode()
    prog = bcc.BPF(src_file=src, cflags=group.cflags())
    try:
        fd = prog.load_func(b"pcpu_output", bcc.BPF.SCHED_CLS).fd

        def produce() -> None:
            def work(cpu: int) -> None:
                os.sched_setaffinity(0, {cpu})
                bpf.prog_test_run(fd, data=b"\0" * 64, repeat=per_cpu)

            threads = [threading.Thread(target=work, args=(c,)) for c in cpus]
            for t in threads:
                t.start()
            for t in threads:
                t.join()

        rb = group.consumer()
        try:
            rings = [rb.ring(i) for i in range(rb.ring_cnt)]
            ts_of = u64_at(0)
            total = per_cpu * len(cpus)
            results: dict[str, float] = {}
            for consumer in ("unordered", *ALGORITHMS):
                algorithm: Algorithm = "optimized" if consumer == "optimized" else "default"
                samples = []
                for _ in range(repeats):
                    produce()
                    run: Callable[[], int]
                    if consumer == "unordered":
                        run = functools.partial(_copy_all, rings, ts_of)
                    else:
                        m = merge_rings(rings, ts_of, algorithm=algorithm)
                        run = functools.partial(_drain_count, m)
                    got, ns = _timed(run)
                    if got != total:
                        raise RuntimeError(f"merge-ring {consumer}: {got} of {total} events")
                    samples.append(ns / total)
                results[consumer] = statistics.median(samples)
            lost = sum(group.dropped())
        finally:
            rb.close()
    finally:
        prog.cleanup()
        group.close()
    base = results["default"]
    return [
        {
            "bench": f"merge-ring-{len(cpus)}",
            "consumer": c,
            "records": total,
            "ns_per_record": round(v, 1),
            "ratio": round(v / base, 3),
            "lost": lost,
        }
        for c, v in results.items()
    ]


def run(*, repeats: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    """The synthetic rows for K = 2, 8, 64, then the real-ring rows (or why not)."""
    repeats = max(1, repeats)
    n = 20_000 if quick else 200_000
    rows: list[dict[str, Any]] = []
    for k in KS:
        rows += _synthetic_rows(k, n, repeats)
    try:
        rows += _ring_rows(5_000 if quick else 50_000, repeats)
    except Exception as exc:  # reported as a row, the rest stands
        rows.append({"bench": "merge-ring", "skipped": f"{type(exc).__name__}: {exc}"})
    return rows
