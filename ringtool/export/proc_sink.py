"""``trace --export`` with the publisher in a process of its own.

:class:`ProcExportSink` is the trace runner's export sink (``publish``, ``tick``,
``record``, ``notes``, ``close``); encoding and publishing run in a child process
(:mod:`ringtool.export.publisher_proc`), so they never hold the GIL the ring drain
needs. The path of a record:

drain -> :class:`~ringtool.export.batcher.Batcher` (numbered lane batches, as in one
process) -> a :class:`~ringtool.export.bounded_queue.BoundedQueue` of ``queue_bytes``
(full: the batch's events count as ``queue_full``, the drain never waits) -> a writer
thread that pickles each batch into the pipe to the child (``os.write`` releases the
GIL while the child is busy) -> the child's Publisher -> JetStream.

The child reports its counters a few times a second (:mod:`ringtool.export.proc_wire`);
:meth:`record` is the parent's drops plus the child's last report. When the child dies
before it was closed, one line says so, and every event handed to it that it had not
reported as acknowledged or dropped, and every event handed over after, counts as
``export_dropped`` with reason ``publisher_died``; the trace goes on. So after
:meth:`close`, ``exported + export_dropped`` is every event handed over, as in one
process (``exported`` may then lag what the stream holds by one report).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import threading
from collections import deque
from typing import Any

from ringtool.errors import ExportError
from ringtool.event.decode import Decoder
from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.export.accounting import ExportCounters, TraceTotals
from ringtool.export.batcher import Batcher
from ringtool.export.bounded_queue import BoundedQueue
from ringtool.export.config import ExportConfig, connect_options, display_url, inbox_prefix
from ringtool.export.proc_wire import (
    F_SETPIPE_SZ,
    PIPE_BYTES,
    add_lists,
    frame,
    merge,
    read_frame,
    write_all,
)
from ringtool.export.run_origin import host_stats, new_origin, take_all

DIED = "publisher_died"
#: Seconds the close waits for the child beyond ``drain_s`` before it kills it.
CLOSE_GRACE_S = 15.0


class ProcExportSink:
    """See the module doc. ``ncpu``: possible CPUs (the counters' length)."""

    def __init__(self, cfg: ExportConfig, decoder: Decoder, ncpu: int) -> None:
        self.cfg = cfg
        self.origin = new_origin(cfg, "trace", decoder.offset_ns)
        self.counters = ExportCounters(ncpu)  # this side's: handed, queue_full, died
        self.batcher = Batcher(
            decoder.types, cfg.batch_events or (8192 if cfg.fmt == "rows" else 2048)
        )
        self._notes: deque[str] = deque()
        self._wake = threading.Event()
        self.queue = BoundedQueue(cfg.queue_bytes, on_put=self._wake.set)
        self._lock = threading.Lock()
        self._to_child = [0] * ncpu  # events written (or being written) to the pipe
        self._child: dict[str, Any] | None = None  # its last report
        self._control: deque[tuple[Any, ...]] = deque()
        self._closing = False
        self._dead = False
        self._final = threading.Event()
        self._stats_n = 0
        self._last: dict[str, Any] = {}
        # bad credentials or CA files: the same error as in one process, before a child
        connect_options(cfg.url, cfg.creds, cfg.tls_ca, cfg.connect_timeout_s,
                        inbox_prefix("host", self.origin.host))  # fmt: skip
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ringtool.export.publisher_proc", str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
            close_fds=True,
        )  # fmt: skip
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        with contextlib.suppress(OSError):  # more than 64 KiB in flight to a busy child
            fcntl.fcntl(self._in, F_SETPIPE_SZ, PIPE_BYTES)
        named = getattr(decoder.syscall_name, "__name__", "") != "<lambda>"
        error = self._start(named, decoder, ncpu)
        if error is not None:
            if not cfg.optional:
                self.close()
                raise ExportError(f"--export {display_url(cfg.url)}: {error}")
            self._notes.append(
                f"export: {display_url(cfg.url)} unreachable ({error}); tracing goes on, "
                "events count as export_dropped until it answers (--export-optional)"
            )

    def _start(self, named: bool, decoder: Decoder, ncpu: int) -> str | None:
        init = ("init", self.cfg, self.origin, decoder.layout, named, decoder.offset_ns, ncpu)
        try:
            write_all(self._in, frame(init))
            first = read_frame(self._out)
            while first is not None and first[0] == "note":  # "created stream ..."
                self._notes.append(str(first[1]))
                first = read_frame(self._out)
        except OSError:
            first = None
        if first is None or first[0] != "first":
            self._died()
            return "the publisher process did not start"
        self._reader = threading.Thread(target=self._read, name="ringtool-export-rx", daemon=True)
        self._writer = threading.Thread(target=self._write, name="ringtool-export-tx", daemon=True)
        self._reader.start()
        self._writer.start()
        return first[1]  # type: ignore[no-any-return]

    # --- the drain's side ----------------------------------------------------------------

    def publish(self, records: Records) -> None:
        for batch in self.batcher.split(records):
            self.counters.hand(batch.cpu, batch.count)
            if self._dead:
                self.counters.drop(batch.cpu, batch.count, DIED)
            elif not self.queue.put(batch):
                self.counters.drop(batch.cpu, batch.count, "queue_full")

    def notes(self) -> list[str]:
        return take_all(self._notes)

    def tick(self, stats: TraceTotals) -> list[str]:
        """Store the counters in ``stats.export``, have the child publish a stats
        message, return the notes that came since the last tick."""
        stats.export = self.record()
        self._last = self._host_stats(stats, "stats")
        self._stats_n += 1
        self._control.append(("stats", self._last, self._stats_n))
        self._wake.set()
        return self.notes()

    def record(self) -> dict[str, Any]:
        with self._lock:
            child = self._child
        own = self.counters.snapshot()
        snap = merge(own, child, sum(self.counters.handed))
        snap["export_queue_bytes"] = self.queue.nbytes + int((child or {}).get("_queue", 0))
        snap["export_connected"] = bool((child or {}).get("_connected", False))
        return snap

    def _host_stats(self, stats: TraceTotals, kind: str) -> dict[str, Any]:
        return host_stats(self.origin, stats, kind, self.record())

    def close(self, stats: TraceTotals | None = None) -> None:
        """Hand the rest over, have the child drain (at most ``drain_s``) and publish
        the summary, wait for its final counts (bounded), store them in
        ``stats.export`` and print pending notes."""
        rec = self._host_stats(stats, "summary") if stats is not None else self._last
        self._stats_n += 1
        self._control.append(("close", rec, self.counters.snapshot(),
                              sum(self.counters.handed), self._stats_n))  # fmt: skip
        self._closing = True
        self._wake.set()
        if not self._dead:
            self._final.wait(self.cfg.drain_s + CLOSE_GRACE_S)
        if not self._final.is_set() and not self._dead:
            with contextlib.suppress(OSError):
                self.proc.kill()
            self._final.wait(5)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        if self.proc.returncode is None:  # pragma: no cover - cannot happen after SIGKILL
            self.proc.kill()
        for f in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if f is not None:
                    f.close()
        self._drain_dead()  # a batch put while the child was found dead
        if stats is not None:
            stats.export = self.record()
        for note in self.notes():
            print(f"ringtool: {printable(note)}", file=sys.stderr)  # may quote the broker

    # --- the writer thread -----------------------------------------------------------------

    def _write(self) -> None:
        while not self._dead:
            self._wake.clear()
            while self._control and self._control[0][0] == "stats":
                if not self._send(self._control.popleft()):
                    return
            batch = self.queue.take()
            if batch is not None:
                with self._lock:
                    self._grow(batch.cpu)
                    self._to_child[batch.cpu] += batch.count
                if not self._send(("batch", batch)):
                    return
                continue
            if self._closing and self._control:
                self._send(self._control.popleft())
                return
            self._wake.wait(0.5)

    def _send(self, obj: tuple[Any, ...]) -> bool:
        try:
            write_all(self._in, frame(obj))
        except OSError:  # the child is gone: the reader counts it
            self._drain_dead()
            return False
        return True

    def _grow(self, cpu: int) -> None:
        if cpu >= len(self._to_child):
            self._to_child.extend([0] * (cpu + 1 - len(self._to_child)))

    # --- the reader thread -----------------------------------------------------------------

    def _read(self) -> None:
        while True:
            try:
                msg = read_frame(self._out)
            except Exception:  # a frame cut short: the child died mid-write
                msg = None
            if msg is None:
                if not self._final.is_set():
                    self._died()
                return
            kind = msg[0]
            if kind == "note":
                self._notes.append(str(msg[1]))
            elif kind in ("snap", "final"):
                with self._lock:
                    self._child = msg[1]
                if kind == "final":
                    self._final.set()

    def _died(self) -> None:
        """The child ended without its final report: count what it did not confirm."""
        with self._lock:
            if self._dead:
                return
            self._dead = True
            child = self._child or {}
            done = add_lists(
                child.get("exported_per_cpu", []), child.get("export_dropped_per_cpu", [])
            )
            lost = [max(0, sent - (done[c] if c < len(done) else 0))
                    for c, sent in enumerate(self._to_child)]  # fmt: skip
        for cpu, n in enumerate(lost):
            if n:
                self.counters.drop(cpu, n, DIED)
        self._drain_dead()
        code = self.proc.poll()
        if code is None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self.proc.wait(2)
        how = f"signal {-code}" if code is not None and code < 0 else f"exit status {code}"
        self._notes.append(f"export: the publisher process died ({how}); {sum(lost)} events "
                           "handed over were not published")  # fmt: skip
        self._wake.set()
        self._final.set()

    def _drain_dead(self) -> None:
        """Batches still in this side's queue once the child is gone: ``publisher_died``."""
        if not self._dead:
            return
        for batch in self.queue.take_all():
            self.counters.drop(batch.cpu, batch.count, DIED)


__all__ = ["DIED", "ProcExportSink"]
