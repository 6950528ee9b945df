"""The publisher process of ``trace --export``: ``python -m ringtool.export.publisher_proc PPID``.

Started by :class:`ringtool.export.proc_sink.ProcExportSink` with its stdin and stdout
as pipes (frames: :mod:`ringtool.export.proc_wire`). It runs the in-process exporter's
:class:`~ringtool.export.publisher.Publisher` (nats-py in its own thread) on the
batches the trace hands over, so encoding and publishing never take the GIL of the
process that drains the rings.

Lifetime: a session of its own (Ctrl-C in the terminal is the trace's to handle: the
trace then closes it), ``SIGINT`` ignored, and ``PR_SET_PDEATHSIG``
(:mod:`ringtool.kernel.parent_death`) so the kernel kills it when the trace dies by
any means. It reports its counters a few times a second, drains and publishes the
summary on ``close``, reports its final counters and exits; the end of its stdin
without a close (the trace died) ends it at once.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from functools import partial
from pathlib import Path
from typing import Any

from ringtool.event.decode import Decoder
from ringtool.event.syscalls import syscall_namer
from ringtool.export.accounting import ExportCounters
from ringtool.export.proc_wire import frame, merge, read_frame, write_all
from ringtool.export.publisher import Publisher
from ringtool.export.wire import Encoder, Message
from ringtool.kernel.cpus import parse_cpu_list
from ringtool.kernel.parent_death import die_with_parent

#: The child's GIL switch interval (Python's default: 5 ms), see :func:`main`.
SWITCH_S = 0.0005
#: Seconds between two counter reports.
REPORT_S = 0.2


class _Child:
    def __init__(self, out_fd: int) -> None:
        self.out_fd = out_fd
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.counters = ExportCounters(1)

    def send(self, obj: tuple[Any, ...]) -> None:
        data = frame(obj)
        with self._lock:
            try:
                write_all(self.out_fd, data)
            except OSError:  # the trace is gone: PDEATHSIG follows
                os._exit(0)

    def report(self, kind: str, pub: Publisher) -> None:
        """Send the counters (``_queue``/``_connected``: the publisher's state)."""
        snap = self.counters.snapshot()
        snap.update(_queue=pub.queue.nbytes, _connected=pub.connected)
        self.send((kind, snap))

    def _reporter(self, pub: Publisher) -> None:
        while not self._stop.wait(REPORT_S):
            self.report("snap", pub)

    def run(self, in_fd: int) -> int:
        init = read_frame(in_fd)
        if init is None or init[0] != "init":
            return 1
        _, cfg, origin, layout, named, offset_ns, ncpu = init
        self.counters = ExportCounters(ncpu)
        decoder = Decoder(layout, syscall_namer() if named else None,
                          realtime_offset_ns=offset_ns)  # fmt: skip
        encoder = Encoder(origin, cfg.fmt, cfg.subject_prefix, decoder)
        pub = Publisher(cfg, encoder, self.counters, lambda line: self.send(("note", line)))
        self.send(("first", pub.start()))
        threading.Thread(
            target=self._reporter, args=(pub,), name="ringtool-export-report", daemon=True
        ).start()
        while True:
            msg = read_frame(in_fd)
            if msg is None:  # the trace is gone without a close (PDEATHSIG follows)
                os._exit(0)
            kind = msg[0]
            if kind == "batch":
                pub.offer(msg[1])
            elif kind == "stats":
                pub.offer_stats(encoder.stats({**msg[1], **self._connected(pub)}, msg[2]))
            elif kind == "close":
                pub.close(partial(self._summary, encoder, pub, *msg[1:]))
                self._stop.set()
                self.report("final", pub)
                return 0

    def _summary(self, enc: Encoder, pub: Publisher, rec: dict[str, Any], own: dict[str, Any],
                 handed: int, n: int) -> Message:  # fmt: skip
        """The summary message: the trace's record with the final counts of both sides."""
        counts = merge(own, self.counters.snapshot(), handed)
        return enc.stats({**rec, **counts, **self._connected(pub), "kind": "summary"}, n)

    @staticmethod
    def _connected(pub: Publisher) -> dict[str, Any]:
        return {"export_queue_bytes": pub.queue.nbytes, "export_connected": pub.connected}


def _any_cpu() -> None:
    """Run on every CPU this cgroup allows, not only those the trace was pinned to
    (``taskset``): a tracer pinned beside busy work keeps its CPU for the drain."""
    allowed = Path("/sys/fs/cgroup/cpuset.cpus.effective")
    try:
        cpus = parse_cpu_list(allowed.read_text()) if allowed.exists() else None
        os.sched_setaffinity(0, cpus or range(os.cpu_count() or 1))
    except (OSError, ValueError):  # a cpuset narrower than the guess: stay as started
        pass


def main(argv: list[str]) -> int:
    die_with_parent(int(argv[0]))
    _any_cpu()
    # the frame reader waits for the GIL after every pipe read while the publisher
    # thread encodes: a short switch interval keeps the pipe from backing up
    sys.setswitchinterval(SWITCH_S)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the frames own stdout: anything else printed goes to stderr
    out_fd = os.dup(1)
    os.dup2(2, 1)
    child = _Child(out_fd)
    try:
        return child.run(0)
    except Exception as exc:  # never a traceback: one line, the trace counts the rest
        child.send(("note", f"export: the publisher process failed ({type(exc).__name__}: "
                            f"{exc})"))  # fmt: skip
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
