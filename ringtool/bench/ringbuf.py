"""``ringtool bench ringbuf``: ringtool's RINGBUF consumer styles against BCC's.

Drain: a 64 MiB ring (bpf/ringbuf_test.c) is filled by running its SCHED_CLS
program with BPF_PROG_TEST_RUN (not timed), then one full drain is timed; each
consumer is measured ``repeats`` times, interleaved, and the median kept:

* ``ringtool-iter``     ``for rec in rb.read(0)``: each record's bytes delivered
* ``ringtool-lease``    ``with rb.lease(4096) as views``: zero-copy views, one commit
* ``ringtool-batch``    ``rb.read_batch(dtype)``: numpy structured array
* ``ringtool-zerocopy`` ``with rb.lease_batch(dtype, 65536)`` until empty: numpy arrays
                         that are views of the ring, one commit a lease; the ``seq``
                         field summed (read)
* ``ringtool-callback`` ``rb.consume()`` with a callback that copies ``bytes(view)``
* ``bcc``               BCC's ``open_ring_buffer`` + ``ring_buffer_consume``, callback
                         copying with ``ctypes.string_at`` (the baseline)
* ``libbpf-c``          libbpf's ``ring_buffer__consume`` in C, a callback reading
                         each record's first u64 (:mod:`ringtool.bench.libbpf_drain`,
                         built with ``cc -lbpf``; timed in C)

Rows: ``{"bench": "ringbuf-drain", "consumer": ..., "records": N,
"ns_per_record": x, "ratio": x / bcc, "ratio_libbpf": x / libbpf-c}`` (a
``libbpf-c`` row with ``skipped`` when libbpf-dev or the compiler is missing).

Sustained: a producer in a separate process runs the program at full speed for a
few seconds into a 1 MiB ring while ringtool consumes; the row reports consumed/s,
produced (the program's sequence counter), dropped (its per-CPU drop counter) and
``unaccounted = produced - consumed - dropped``, which must be 0.
"""

from __future__ import annotations

import select
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ringtool.bench.libbpf_drain import LibbpfDrain
from ringtool.errors import BenchError
from ringtool.kernel import bpf
from ringtool.kernel.libc import copy_from_address
from ringtool.kernel.privileges import require_bpf_privileges
from ringtool.programs.loader import compile_program, load_function
from ringtool.readers.ringbuf import RingBuffer

EVENT = np.dtype([("seq", "<u8"), ("ts", "<u8"), ("cpu", "<u4"), ("magic", "<u4")])
RECORD_SPAN = 32  # 24-byte payload + 8-byte header
#: Records per lease of the zero-copy drain: 2 MiB of ring, a core's L2 here. Measured
#: in one run against libbpf-c: 4096 1.72x, 16384 1.04x, 65536 0.51x, whole ring 1.35x.
ZEROCOPY_CHUNK = 65536
PACKET = b"\0" * 64


class _Fixture:
    def __init__(self, pages: int) -> None:
        self.obj = compile_program("ringbuf_test.c", defines={"RINGTOOL_RING_PAGES": pages})
        self.prog_fd = load_function(self.obj, "emit_reserve", "SCHED_CLS").fd
        self.events = self.obj[b"events"]
        self.size = pages * 4096

    def fill(self) -> int:
        n = (self.size - 1) // RECORD_SPAN
        bpf.prog_test_run(self.prog_fd, data=PACKET, repeat=n)
        return n

    def counter(self, name: bytes) -> int:
        raw = bpf.map_lookup(self.obj[name].map_fd, b"\0\0\0\0", 8)
        return int(struct.unpack("<Q", raw or bytes(8))[0])


def _drain_consumers(fx: _Fixture, rb: RingBuffer) -> dict[str, Callable[[], int]]:
    def iterate() -> int:
        rb.take_over()  # the other consumers of the map read before this one
        n = 0
        for rec in rb.read(timeout_ms=0):
            rec.data  # noqa: B018 - the bytes are what is delivered
            n += 1
        return n

    def lease() -> int:
        rb.take_over()  # the other consumers of the map read before this one
        n = 0
        while True:
            with rb.lease(4096) as views:
                if not len(views):
                    return n
                for v in views:
                    v.nbytes  # noqa: B018
                n += len(views)

    def batch() -> int:
        rb.take_over()  # the other consumers of the map read before this one
        return len(rb.read_batch(EVENT))

    def zerocopy() -> int:
        rb.take_over()  # the other consumers of the map read before this one
        # leases of ZEROCOPY_CHUNK records: the header scan leaves them in the cache
        # for the read (one lease of the whole ring reads it twice from memory)
        n = 0
        while True:
            with rb.lease_batch(EVENT, ZEROCOPY_CHUNK) as lease:
                if not len(lease):
                    return n
                for arr in lease.arrays:
                    int(arr["seq"].sum())
                n += len(lease)

    sink: list[bytes] = []

    def copy_cb(view: memoryview) -> None:
        sink.append(bytes(view))
        if len(sink) >= 4096:
            sink.clear()

    rb_cb = RingBuffer(fx.events, copy_cb)  # a second manager on the same map

    def callback() -> int:
        rb_cb.take_over()
        return rb_cb.consume()

    counted = [0]

    def bcc_cb(_ctx: Any, data: Any, size: int) -> None:
        counted[0] += 1
        bcc_sink.append(copy_from_address(data, size))
        if len(bcc_sink) >= 4096:
            bcc_sink.clear()

    bcc_sink: list[bytes] = []
    fx.events.open_ring_buffer(bcc_cb)

    def bcc() -> int:
        counted[0] = 0
        fx.obj.ring_buffer_consume()
        return counted[0]

    return {
        "ringtool-iter": iterate,
        "ringtool-lease": lease,
        "ringtool-batch": batch,
        "ringtool-zerocopy": zerocopy,
        "ringtool-callback": callback,
        "bcc": bcc,
    }


def drain_rows(*, repeats: int, quick: bool) -> list[dict[str, Any]]:
    fx = _Fixture(pages=1024 if quick else 16384)  # 4 MiB or 64 MiB
    rb = RingBuffer(fx.events)
    consumers: dict[str, Callable[[], int | tuple[int, int]]] = {**_drain_consumers(fx, rb)}
    with tempfile.TemporaryDirectory(prefix="ringtool-bench-") as tmp:
        skipped = ""
        try:
            c_drain = LibbpfDrain(fx.events.map_fd, Path(tmp))
        except BenchError as exc:
            skipped = str(exc)
        else:
            consumers["libbpf-c"] = c_drain.drain
        try:
            rows = _measure(fx, consumers, repeats)
        finally:
            if not skipped:
                c_drain.close()
    rb.close()
    fx.obj.cleanup()
    if skipped:
        rows.append({"bench": "ringbuf-drain", "consumer": "libbpf-c", "skipped": skipped})
    return rows


def _measure(
    fx: _Fixture, consumers: dict[str, Callable[[], int | tuple[int, int]]], repeats: int
) -> list[dict[str, Any]]:
    samples: dict[str, list[float]] = {name: [] for name in consumers}
    records: dict[str, int] = {}
    for _ in range(repeats):
        for name, drain in consumers.items():
            filled = fx.fill()
            t0 = time.perf_counter_ns()
            got = drain()
            elapsed = time.perf_counter_ns() - t0
            if isinstance(got, tuple):  # timed by the helper itself
                got, elapsed = got
            if got != filled:
                raise RuntimeError(f"{name} drained {got} of {filled} records")
            samples[name].append(elapsed / got)
            records[name] = got
    base = statistics.median(samples["bcc"])
    c_base = statistics.median(samples["libbpf-c"]) if "libbpf-c" in samples else None
    rows = []
    for name, vals in samples.items():
        ns = statistics.median(vals)
        row = {
            "bench": "ringbuf-drain",
            "consumer": name,
            "records": records[name],
            "ns_per_record": round(ns, 1),
            "ratio": round(ns / base, 3),
        }
        if c_base:
            row["ratio_libbpf"] = round(ns / c_base, 3)
        rows.append(row)
    return rows


_PRODUCER = """
import sys, time
from ringtool.kernel import bpf
fd, seconds = int(sys.argv[1]), float(sys.argv[2])
end = time.monotonic() + seconds
while time.monotonic() < end:
    bpf.prog_test_run(fd, data=b"\\0" * 64, repeat=20000)
"""


def sustained_rows(*, seconds: float) -> list[dict[str, Any]]:
    fx = _Fixture(pages=256)  # 1 MiB: small enough that a full-speed producer drops
    rows = []
    for style in ("batch", "callback"):
        fx.obj[b"seq_counter"].clear()
        fx.obj[b"events_drops"].clear()
        consumed = 0

        def count(_view: memoryview) -> None:
            nonlocal consumed
            consumed += 1

        rb = RingBuffer(fx.events, count)
        producer = subprocess.Popen(
            [sys.executable, "-c", _PRODUCER, str(fx.prog_fd), str(seconds)],
            pass_fds=[fx.prog_fd],
        )
        t0 = time.monotonic()
        epfd = rb.epoll_fd()
        while producer.poll() is None:
            if style == "batch":
                select.select([epfd], [], [], 0.01)
                consumed += len(rb.read_batch(EVENT))
            else:
                rb.poll(10)
        elapsed = time.monotonic() - t0
        consumed += len(rb.read_batch(EVENT)) if style == "batch" else rb.consume()
        produced = fx.counter(b"seq_counter")
        dropped = sum(rb.dropped())
        rb.close()
        rows.append(
            {
                "bench": "ringbuf-sustained",
                "consumer": f"ringtool-{style}",
                "seconds": round(elapsed, 2),
                "consumed_per_s": round(consumed / elapsed),
                "produced": produced,
                "consumed": consumed,
                "dropped": dropped,
                "unaccounted": produced - consumed - dropped,
            }
        )
    fx.obj.cleanup()
    return rows


def run(*, repeats: int, quick: bool) -> list[dict[str, Any]]:
    require_bpf_privileges("ringtool bench ringbuf")
    rows = drain_rows(repeats=repeats, quick=quick)
    rows += sustained_rows(seconds=1.0 if quick else 3.0)
    return rows
