"""``ringtool bench kmes``: the KMES writer and reader, and kernel -> bridge -> reader.

Rows (median of ``repeats`` rounds, 64-byte payloads):

* ``kmes-write`` / ``single``: ``Writer.write`` per event (one publish each).
* ``kmes-write`` / ``batch256``: ``Writer.write_batch`` of 256 events.
* ``kmes-read`` / ``drain``: ``Reader.drain`` of a full buffer, same process.
* ``kmes-e2e`` / ``bridge->reader``: BPF_PROG_TEST_RUN of
  ``bpf/kmes_bridge.c:kmes_bench_emit`` (BPF ring buffer) -> ringtool ``RingBuffer`` ->
  ``KmesBridge`` -> a reader *process* attached over the socket. Reports events/s and
  the p50/p99 latency from each KMES event's timestamp (taken by the bridge's writer)
  to the reader's receipt. Needs root and BPF; otherwise the row says why it was skipped.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any

from ringtool.kmes.buffer import KmesBuffer
from ringtool.kmes.reader import Reader
from ringtool.kmes.writer import Writer

PAYLOAD = b"\x42" * 64


def _row(bench: str, consumer: str, records: int, seconds: float, **extra: Any) -> dict[str, Any]:
    return {
        "bench": bench,
        "consumer": consumer,
        "records": records,
        "ns_per_record": seconds * 1e9 / records,
        "events_per_s": round(records / seconds),
        **extra,
    }


def _write_read(n: int) -> tuple[float, float, float]:
    cap = 1 << 24
    buf = KmesBuffer(0, cap)
    try:
        w = Writer(buf)
        t = time.perf_counter()
        for _ in range(n):
            w.write(1, PAYLOAD)
        single = time.perf_counter() - t
        buf2 = KmesBuffer(1, cap)
        try:
            w2 = Writer(buf2)
            batch = [(1, 3, PAYLOAD)] * 256
            t = time.perf_counter()
            for _ in range(n // 256):
                w2.write_batch(batch)
            batched = time.perf_counter() - t
            r = Reader(*buf2.consumer_fds())
            t = time.perf_counter()
            got = 0
            while evs := r.drain(8192):
                got += len(evs)
            read = time.perf_counter() - t
            r.close()
        finally:
            buf2.close()
    finally:
        buf.close()
    return single, batched, read


def _end_to_end(n: int) -> dict[str, Any]:
    from ringtool.bridge.core import KmesBridge
    from ringtool.kernel import bpf
    from ringtool.kernel.cpus import online_cpus
    from ringtool.kmes.events import BRIDGE_PREFIX
    from ringtool.programs.loader import compile_program, load_function
    from ringtool.readers.ringbuf import RingBuffer

    obj = compile_program(
        "kmes_bridge.c",
        defines={
            "RINGTOOL_RING_PAGES": 4096,
            "KMES_WANT_EXEC": 0,
            "KMES_WANT_EXIT": 0,
            "KMES_BENCH": 1,
        },
    )
    tmp = tempfile.mkdtemp(prefix="ringtool-bench-")
    sock = os.path.join(tmp, "kmes.sock")
    bridge = KmesBridge(
        online_cpus(), socket_path=sock, capacity=1 << 24, config_path="/nonexistent"
    )
    stop = threading.Event()
    try:
        bridge.start()

        def on_ring(data: memoryview) -> None:
            cpu, etype = BRIDGE_PREFIX.unpack_from(data)
            bridge.submit(cpu, 1, etype, bytes(data[8:]))

        rb = RingBuffer(obj[b"kmes_events"], on_ring)

        def pump() -> None:
            while not stop.is_set():
                rb.poll(20)
                bridge.flush()

        th = threading.Thread(target=pump, daemon=True)
        th.start()
        reader = subprocess.Popen(
            [sys.executable, "-m", "ringtool.bench.kmes", "reader", sock, str(n)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert reader.stdout is not None
        if reader.stdout.readline().strip() != "attached":
            raise RuntimeError("bench reader process failed to attach")
        fd = load_function(obj, "kmes_bench_emit", "SCHED_CLS").fd
        t0 = time.time_ns()
        burst = 500
        for _ in range(n // burst):
            bpf.prog_test_run(fd, data=b"\0" * 64, repeat=burst)
            time.sleep(0.0005)
        res = json.loads(reader.communicate(timeout=120)[0].splitlines()[-1])
        secs = (res["last_ns"] - t0) / 1e9
        return _row(
            "kmes-e2e",
            "bridge->reader",
            res["events"],
            secs,
            p50_us=res["p50_us"],
            p99_us=res["p99_us"],
        )
    finally:
        stop.set()
        bridge.close()
        obj.cleanup()


def run(*, repeats: int, quick: bool) -> list[dict[str, Any]]:
    n = 20_000 if quick else 200_000
    runs = [_write_read(n) for _ in range(max(repeats, 1))]
    single, batched, read = (statistics.median(col) for col in zip(*runs, strict=True))
    rows = [
        _row("kmes-write", "single", n, single),
        _row("kmes-write", "batch256", n // 256 * 256, batched),
        _row("kmes-read", "drain", n // 256 * 256, read),
    ]
    try:
        rows.append(_end_to_end(10_000 if quick else 100_000))
    except Exception as exc:  # reported in the row; the other rows stand
        rows.append({"bench": "kmes-e2e", "skipped": f"{type(exc).__name__}: {exc}"})
    return rows


def _reader_main(sock: str, n: int) -> None:
    from ringtool.kmes.attach import attach
    from ringtool.kmes.reader import wait_any

    readers = attach(sock, start="head")
    print("attached", flush=True)
    lat: list[int] = []
    last = 0
    deadline = time.monotonic() + 120
    while len(lat) < n and time.monotonic() < deadline:
        got = False
        for r in readers:
            evs = r.drain(8192)
            if evs:
                got = True
                now = time.time_ns()
                lat.extend(now - ev.timestamp for ev in evs)
                last = now
        if not got:
            wait_any(readers, timeout=1.0)
    lat.sort()
    out = {
        "events": len(lat),
        "last_ns": last,
        "p50_us": round(lat[len(lat) // 2] / 1e3, 1) if lat else None,
        "p99_us": round(lat[int(len(lat) * 0.99)] / 1e3, 1) if lat else None,
    }
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "reader":
        _reader_main(sys.argv[2], int(sys.argv[3]))
