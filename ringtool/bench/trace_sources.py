"""``ringtool bench trace``'s ``trace-source-cost`` phase: what each trace source costs
in the kernel, from the kernel's BPF run-time statistics.

One ``ringtool trace`` of every RINGBUF source (:data:`ringtool.trace.reading.sources.RING_SOURCES`:
exec, open, syscalls, tcp, disk, and any added later) with ``--json`` to
``/dev/null``, pinned to one CPU, runs while the producer makes opens, forks and execs
(``openexec`` mode, :mod:`ringtool.bench.trace_proc`) and a thread of the bench reads
a file of its temporary directory with ``O_DIRECT`` (block I/O requests: the disk
source's events; none where the file system refuses ``O_DIRECT``, such as tmpfs:
``disk_io`` says so). The summary's ``cost`` has each program's runs and run time;
per source (the programs it loaded): the runs, their average ns, the share of a CPU,
its events (the summary's ``by_type`` of its types) and the BPF ns per event. The
statistics' own clock reads are in these figures (the ``trace-overhead`` phase
measures them apart: ``stats_added_ns``).

Only numbers; nothing here is asserted.
"""

from __future__ import annotations

import mmap
import os
import threading
from pathlib import Path
from typing import Any

from ringtool.bench.trace_proc import Loop, TraceChild
from ringtool.event.registry import SOURCE_OF
from ringtool.trace.reading.sources import RING_SOURCES

#: the O_DIRECT reader's file and read size
IO_FILE_BYTES = 4 << 20
IO_READ_BYTES = 4096


class DirectReader:
    """A thread reading ``path`` with ``O_DIRECT`` (each read a block request) until
    :meth:`stop`; ``reads``: how many it made, ``why``: why none (the file system
    refused ``O_DIRECT``), else ``""``."""

    def __init__(self, path: Path) -> None:
        with open(path, "wb") as f:
            f.write(b"\xa5" * IO_FILE_BYTES)
            os.fsync(f.fileno())
        self.path = path
        self.reads = 0
        self.why = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-direct-io", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
        except OSError as exc:
            self.why = f"O_DIRECT refused: {exc.strerror}"
            return
        buf = mmap.mmap(-1, IO_READ_BYTES)  # page-aligned, as O_DIRECT needs
        slots = IO_FILE_BYTES // IO_READ_BYTES
        try:
            while not self._stop.is_set():
                off = (self.reads * 7919 % slots) * IO_READ_BYTES
                os.preadv(fd, [buf], off)
                self.reads += 1
        except OSError as exc:
            self.why = f"O_DIRECT read failed: {exc.strerror}"
        finally:
            os.close(fd)
            buf.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def per_source(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The summary's programs (``"source category:event"``) and events by source."""
    out: dict[str, dict[str, Any]] = {}
    cost = summary.get("cost") or {}
    for prog in cost.get("programs", []):
        row = out.setdefault(prog["program"].split(" ", 1)[0],
                             {"programs": 0, "runs": 0, "run_time_ns": 0})  # fmt: skip
        row["programs"] += 1
        row["runs"] += prog["run_cnt"]
        row["run_time_ns"] += prog["run_time_ns"]
    for type_name, n in summary.get("by_type", {}).items():
        source = SOURCE_OF.get(type_name)
        if source in out:
            out[source]["events"] = out[source].get("events", 0) + n
    return out


def source_cost(binary: Path, seconds: float, tmp: Path, *, producer_cpu: int,
                trace_cpu: int) -> list[dict[str, Any]]:  # fmt: skip
    """One row per RINGBUF source (see the module doc)."""
    child = TraceChild(["--events", ",".join(RING_SOURCES), "--json"], trace_cpu,
                       bpf_stats=True)  # fmt: skip
    try:
        child.wait_ready()
        reader = DirectReader(tmp / "direct-io.bin")
        try:
            Loop(binary, "openexec", producer_cpu, seconds).result()
        finally:
            reader.stop()
        done = child.finish(interrupt=True)
    finally:
        child.kill()
    rows = []
    seconds_run = float((done.summary.get("cost") or {}).get("seconds") or 0.0)
    for source, row in sorted(per_source(done.summary).items()):
        runs, ns, events = row["runs"], row["run_time_ns"], row.get("events", 0)
        rows.append({
            "bench": "trace-source-cost", "source": source, "programs": row["programs"],
            "runs": runs, "avg_ns": round(ns / runs, 1) if runs else None,
            "cpu_pct": round(100 * ns / (seconds_run * 1e9), 3) if seconds_run else None,
            "events": events, "bpf_ns_per_event": round(ns / events, 1) if events else None,
            **({"disk_io": reader.why or f"{reader.reads} O_DIRECT reads"}
               if source == "disk" else {}),
        })  # fmt: skip
    return rows


__all__ = ["DirectReader", "per_source", "source_cost"]
