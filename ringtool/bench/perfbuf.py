"""``ringtool bench perfbuf``: drain a full per-CPU perf buffer, ringtool vs BCC.

Each round fills CPU 0's buffer (64 MiB; 1 MiB with ``quick``) with
fixed-size records by BPF_PROG_TEST_RUN of bpf/perf_test.c on CPU 0 (this thread is
pinned there), *then* times one full drain by one consumer: the producer has stopped,
so BCC's ``perf_buffer_consume`` (which re-reads data_head while a producer runs)
ends. Consumers, all in the same process and run:

* ``ringtool-iter``      ``for rec in pb.read(timeout_ms=0)`` (owned Record copies)
* ``ringtool-lease``     ``with pb.lease() as views`` (zero-copy views)
* ``ringtool-batch``     ``pb.read_batch(dtype)`` (numpy structured array)
* ``ringtool-zerocopy``  ``with pb.lease_batch(dtype, 65536)`` until empty: numpy
                         arrays that are views of the ring, ``seq`` summed
* ``ringtool-callback``  ``pb.consume()`` with a callback appending ``bytes(data)``
* ``libbpf-c``           libbpf's ``perf_buffer__consume`` in C, a callback reading
                         each sample's first u64 (:mod:`ringtool.bench.perfbuf_libbpf`,
                         a helper process built with ``cc -lbpf``; timed in C)
* ``bcc``                BCC ``open_perf_buffer`` + ``perf_buffer_consume`` with a
                         callback appending ``ctypes.string_at(data, size)``

Rows: ``{"bench": "perfbuf-drain", "consumer", "records", "ns_per_record", "ratio",
"ratio_libbpf"}`` (median of ``repeats`` rounds; ratio to ``bcc``, ratio_libbpf to
``libbpf-c`` in the same run); the ``libbpf-c`` row is ``{"bench", "consumer",
"skipped": why}`` when the compiler or libbpf-dev is missing.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ringtool.bench import perfbuf_libbpf
from ringtool.errors import BenchError
from ringtool.kernel import bpf as kbpf
from ringtool.kernel.libc import copy_from_address
from ringtool.programs.loader import compile_program, load_function
from ringtool.readers.perfbuf import PAGE_SIZE, PerfBuffer

RECORD_SIZE = 32  # 8 header + 4 raw size + 20 raw (16-byte event padded by the kernel)
EVENT_DTYPE = np.dtype([("seq", "<u8"), ("cpu", "<u4"), ("magic", "<u4")])
# No wakeups while filling: with wakeup_events=1 every output queues an irq_work (the
# fill then takes ~4 us a record instead of ~0.4); the drains never wait anyway.
NO_WAKEUP = 1 << 30
#: Records per lease of the zero-copy drain: 2 MiB of ring (a core's L2 here), as in
#: ``ringtool bench ringbuf``.
ZEROCOPY_CHUNK = 65536
CONSUMERS = (
    "ringtool-iter", "ringtool-lease", "ringtool-batch", "ringtool-zerocopy",
    "ringtool-callback", "libbpf-c", "bcc",
)  # fmt: skip


def _sizes(quick: bool) -> tuple[int, int]:
    """(page_cnt, records to produce): the buffer is filled up to one record short
    (the kernel keeps one byte free: CIRC_SPACE in ring_buffer_has_space)."""
    nbytes = (1 << 20) if quick else (64 << 20)
    return nbytes // PAGE_SIZE, nbytes // RECORD_SIZE - 1


def load_producer() -> Any:
    """The BCC module of bpf/perf_test.c and its SCHED_CLS ``emit`` function."""
    b = compile_program("perf_test.c")
    return b, load_function(b, "emit", "SCHED_CLS")


def fill(prog_fd: int, records: int, cpu: int = 0) -> None:
    """Run the producer ``records`` times on ``cpu`` (this thread pinned there)."""
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {cpu})
    try:
        kbpf.prog_test_run(prog_fd, data=b"\0" * 64, repeat=records)
    finally:
        os.sched_setaffinity(0, old)


def _time_ringtool(consumer: str, b: Any, prog_fd: int, page_cnt: int, records: int) -> float:
    out: list[bytes] = []
    cb: Callable[[int, memoryview], Any] = lambda cpu, data: out.append(bytes(data))  # noqa: E731
    with PerfBuffer(b[b"events"], cb, page_cnt=page_cnt, cpus=[0], wakeup_events=NO_WAKEUP) as pb:
        fill(prog_fd, records)
        t0 = time.perf_counter_ns()
        if consumer == "ringtool-iter":
            n = 0
            for _rec in pb.read(timeout_ms=0):
                n += 1  # noqa: SIM113 - the loop body is what is timed
        elif consumer == "ringtool-lease":
            n = 0
            while True:  # bounded leases, as a streaming reader would take them
                with pb.lease(4096) as views:
                    if not len(views):
                        break
                    n += len(views)
        elif consumer == "ringtool-batch":
            n = len(pb.read_batch(EVENT_DTYPE))
        elif consumer == "ringtool-zerocopy":
            n = 0
            while True:
                with pb.lease_batch(EVENT_DTYPE, ZEROCOPY_CHUNK) as lease:
                    if not len(lease):
                        break
                    for arr in lease.arrays:
                        int(arr["seq"].sum())
                    n += len(lease)
        else:
            pb.consume()
            n = len(out)
        dt = time.perf_counter_ns() - t0
    return _per_record(consumer, dt, n, records)


def _time_bcc(b: Any, prog_fd: int, page_cnt: int, records: int) -> float:
    table = b[b"events"]
    out: list[bytes] = []

    def cb(cpu: int, data: int, size: int) -> None:
        out.append(copy_from_address(data, size))

    table.open_perf_buffer(cb, page_cnt=page_cnt, wakeup_events=NO_WAKEUP)
    try:
        fill(prog_fd, records)
        t0 = time.perf_counter_ns()
        b.perf_buffer_consume()
        dt = time.perf_counter_ns() - t0
    finally:
        for key in list(table._open_key_fds):
            del table[key]
    return _per_record("bcc", dt, len(out), records)


def _time_libbpf(binary: Path, b: Any, prog_fd: int, page_cnt: int, records: int) -> float:
    drain = perfbuf_libbpf.LibbpfPerfDrain(binary, b[b"events"].map_fd, page_cnt, cpu=0)
    try:
        fill(prog_fd, records)
        got, dt = drain.drain()
    finally:
        drain.close()
    return _per_record("libbpf-c", dt, got, records)


def _per_record(consumer: str, dt_ns: int, got: int, produced: int) -> float:
    if got != produced:
        raise RuntimeError(f"{consumer}: drained {got} records, produced {produced}")
    return dt_ns / got


def run(*, repeats: int = 5, quick: bool = False) -> list[dict[str, Any]]:
    page_cnt, records = _sizes(quick)
    b, fn = load_producer()
    times: dict[str, list[float]] = {c: [] for c in CONSUMERS}
    skipped = ""
    try:
        with tempfile.TemporaryDirectory(prefix="ringtool-bench-") as tmp:
            try:
                binary = perfbuf_libbpf.build(Path(tmp))
            except BenchError as exc:
                skipped = str(exc)
                del times["libbpf-c"]
            for _ in range(max(1, repeats)):
                for consumer in times:
                    if consumer == "bcc":
                        t = _time_bcc(b, fn.fd, page_cnt, records)
                    elif consumer == "libbpf-c":
                        t = _time_libbpf(binary, b, fn.fd, page_cnt, records)
                    else:
                        t = _time_ringtool(consumer, b, fn.fd, page_cnt, records)
                    times[consumer].append(t)
    finally:
        b.cleanup()
    medians = {c: statistics.median(v) for c, v in times.items()}
    base, c_base = medians["bcc"], medians.get("libbpf-c")
    rows: list[dict[str, Any]] = []
    for c in CONSUMERS:
        if c not in medians:
            rows.append({"bench": "perfbuf-drain", "consumer": c, "skipped": skipped})
            continue
        ns = medians[c]
        row = {"bench": "perfbuf-drain", "consumer": c, "records": records,
               "ns_per_record": round(ns, 1), "ratio": round(ns / base, 3)}  # fmt: skip
        if c_base:
            row["ratio_libbpf"] = round(ns / c_base, 3)
        rows.append(row)
    return rows
