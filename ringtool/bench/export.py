"""``ringtool bench export``: trace records through ``--export`` into JetStream and out.

In one run, against a local ``nats-server`` the bench starts (127.0.0.1, a free port,
a temporary file store; stopped at the end), each *path* gets the same load:

* the load: ``bpf/trace_bench.c`` run with BPF_PROG_TEST_RUN by a producer process
  pinned to CPU 0 at a fixed offered rate, writing ``struct trace_event`` records into
  the per-CPU RINGBUF group that ``ringtool trace`` reads;
* the drain: the trace runner's steps (``read_batch`` of up to 65536 records,
  :class:`~ringtool.trace.report.stats.TraceStats`, the output), then
* ``drain-only``: nothing more (the baseline for kernel drops: what the ring drain
  alone loses at this rate);
* ``file-json``: JSON lines to a file (what ``trace --json > file`` does);
* ``nats-json`` / ``nats-rows``: :class:`~ringtool.bench.export_sink.ExportSink` (the
  publisher in the drain's process: one GIL for both, the baseline) with
  ``--export-format json`` / ``rows``, published to JetStream with acknowledgements; a
  plain subscriber in another process (:mod:`ringtool.bench.export_sub`) reads the
  stream back;
* ``proc-json`` / ``proc-rows``: the same through
  :class:`~ringtool.export.proc_sink.ProcExportSink` (what ``trace --export --quiet``
  runs: the publisher in a process of its own, fed through a pipe).

``--repeats N`` runs N rounds, the paths in alternating order (reversed every other
round), and keeps each path's median row (``rounds``: N; ``events_per_s_range``: the
lowest and highest of the rounds).

Row per path: offered and achieved events/s (events acknowledged by the stream, or
written to the file, per second from the first event to the last acknowledgement),
body bytes per event, kernel drops (failed reservations: the ring was full), export
drops, and the latency from the kernel timestamp to the subscriber (or the file write)
as p50/p99 in ms. Never asserted: reported.
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ringtool.event.records import Records
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.kernel.privileges import require_bpf_privileges

RING_BYTES = 64 << 20
BATCH = 65536

_PRODUCER = """
import os, sys, time
from ringtool.kernel import bpf
fd, rate, seconds = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
os.sched_setaffinity(0, {0})
chunk, n, pkt = 2000, 0, b"\\0" * 64
t0 = time.monotonic()
while time.monotonic() < t0 + seconds:
    ahead = n / rate - (time.monotonic() - t0)
    if ahead > 0:
        time.sleep(ahead)
    bpf.prog_test_run(fd, data=pkt, repeat=chunk)
    n += chunk
print(n, flush=True)
"""


class _Load:
    """The generator program and the ring group it writes into."""

    def __init__(self) -> None:
        from ringtool.event.layout import load_layout
        from ringtool.programs.loader import compile_program, load_function
        from ringtool.readers.ringbuf_group import RingBufGroup
        from ringtool.trace.reading.cflags import defines_of

        self.layout = load_layout()
        self.group = RingBufGroup(cpus_per_buffer=1, ring_bytes=RING_BYTES)
        defines = {**defines_of(self.group.cflags()), **self.layout.size_defines()}
        self.obj = compile_program("trace_bench.c", defines=defines)
        self.fd = load_function(self.obj, "trace_bench_emit", "SCHED_CLS").fd
        self.rb = self.group.consumer()

    def produce(self, rate: float, seconds: float) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, "-c", _PRODUCER, str(self.fd), str(rate),
                                 str(seconds)], pass_fds=[self.fd], stdout=subprocess.PIPE,
                                text=True)  # fmt: skip

    def close(self) -> None:
        self.rb.close()
        self.obj.cleanup()
        self.group.close()


def _subscriber(url: str, stream: str, prefix: str) -> subprocess.Popen[str]:
    sub = subprocess.Popen([sys.executable, "-m", "ringtool.bench.export_sub", url, stream,
                            prefix, "120"], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert sub.stdout is not None
    if sub.stdout.readline().strip() != "ready":
        raise RuntimeError("the bench subscriber did not start")
    return sub


def run_path(path: str, load: _Load, url: str, rate: float, seconds: float,
             tmp: Path, round_no: int = 0) -> dict[str, Any]:  # fmt: skip
    """One path (see the module doc), into a stream of its own for the round (the
    subscriber reads the stream from its start); returns its row."""
    from ringtool.bench.export_sink import ExportSink
    from ringtool.event.decode import Decoder
    from ringtool.export.config import ExportConfig
    from ringtool.export.proc_sink import ProcExportSink
    from ringtool.trace.report.stats import TraceStats
    from ringtool.trace.writers.output_json import JsonOutput

    layout, ncpu = load.layout, possible_cpu_count()
    decoder = Decoder(layout)
    stats = TraceStats(layout.type_names, ncpu, ["bench"])
    drops_before = sum(load.group.dropped())
    sink: Any = None
    sub = None
    out_file = tmp / f"{path}.jsonl"
    lat: list[np.ndarray[Any, Any]] = []
    out: Any = None
    if path == "file-json":
        out = JsonOutput(out_file.open("w"), decoder)
    elif path != "drain-only":
        fmt = path.split("-", 1)[1]
        name = f"{path.replace('-', '_')}_{round_no}"
        cfg = ExportConfig(url=url, stream=f"BENCH_{name.upper()}", subject_prefix=f"bench_{name}",
                           fmt=fmt, host="bench", drain_s=60)  # fmt: skip
        sink = (ProcExportSink if path.startswith("proc") else ExportSink)(cfg, decoder, ncpu)
        sink.notes()  # "created stream": not news here
        sub = _subscriber(url, cfg.stream, cfg.subject_prefix)
    producer = load.produce(rate, seconds)
    t0 = time.monotonic()
    epfd = load.rb.epoll_fd()
    while True:
        done = producer.poll() is not None
        select.select([epfd], [], [], 0.05)
        while len(arr := load.rb.read_batch(layout.event, BATCH)):
            stats.add_batch(arr)
            if sink is not None:
                sink.publish(Records(arr))
            else:
                if out is not None:
                    out.batch(Records(arr))
                ts = arr["h"]["ts"].astype(np.int64) + decoder.offset_ns
                lat.append(time.time_ns() - ts)  # kernel stamp -> written (or drained)
        if done:
            break
    produced = int(producer.communicate()[0])
    stats.tick(drops_cpu=load.group.dropped())
    row: dict[str, Any] = {"bench": "export", "path": path, "offered_per_s": round(rate),
                           "produced": produced,
                           "kernel_drops": sum(load.group.dropped()) - drops_before}  # fmt: skip
    if sink is not None:
        sink.close(stats)
        elapsed = time.monotonic() - t0
        assert sub is not None
        got = json.loads(sub.communicate(timeout=180)[0].splitlines()[-1])
        x = stats.export or {}
        row.update({
            "events": x.get("exported", 0), "export_dropped": x.get("export_dropped", 0),
            "export_dropped_by_reason": {
                k: v for k, v in x.get("export_dropped_by_reason", {}).items() if v
            },
            "events_per_s": round(x.get("exported", 0) / elapsed),
            "bytes_per_event": round(x.get("export_bytes", 0) / max(1, x.get("exported", 0)), 1),
            "received": got["events"], "p50_ms": got["p50_ms"], "p99_ms": got["p99_ms"],
        })  # fmt: skip
    else:
        size = 0
        if out is not None:
            out.stream.close()
            size = out_file.stat().st_size
            out_file.unlink()
        elapsed = time.monotonic() - t0
        all_lat = np.concatenate(lat) / 1e6 if lat else np.zeros(1)
        row.update({
            "events": stats.total, "export_dropped": 0,
            "events_per_s": round(stats.total / elapsed),
            "bytes_per_event": round(size / max(1, stats.total), 1),
            "received": stats.total, "p50_ms": round(float(np.percentile(all_lat, 50)), 2),
            "p99_ms": round(float(np.percentile(all_lat, 99)), 2),
        })  # fmt: skip
    return row


PATHS = ("drain-only", "file-json", "nats-json", "proc-json", "nats-rows", "proc-rows")


def _median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The row of the round with the median ``events_per_s``, with the rounds' range."""
    ranked = sorted(rows, key=lambda r: r["events_per_s"])
    row = dict(ranked[(len(ranked) - 1) // 2])
    row["rounds"] = len(rows)
    row["events_per_s_range"] = [ranked[0]["events_per_s"], ranked[-1]["events_per_s"]]
    return row


def run(*, repeats: int, quick: bool) -> list[dict[str, Any]]:
    """``repeats`` alternating rounds of every path (module doc); a row per path."""
    require_bpf_privileges("ringtool bench export")
    from ringtool.bench.local_server import LocalNats

    seconds = 2.0 if quick else 5.0
    rate = 200_000.0 if quick else 600_000.0
    load = _Load()
    rounds: dict[str, list[dict[str, Any]]] = {path: [] for path in PATHS}
    try:
        with (
            tempfile.TemporaryDirectory(prefix="ringtool-bench-") as tmp,
            LocalNats(Path(tmp) / "nats") as server,
        ):
            for i in range(max(1, repeats)):
                for path in PATHS if i % 2 == 0 else PATHS[::-1]:
                    row = run_path(path, load, server.url, rate, seconds, Path(tmp), i)
                    rounds[path].append(row)
    finally:
        load.close()
    return [_median_row(rows) for rows in rounds.values()]


__all__ = ["PATHS", "run", "run_path"]
