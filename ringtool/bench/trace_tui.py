"""``ringtool bench trace``'s ``trace-tui-cpu`` phase: what the dashboard costs to draw.

The real dashboard (:class:`ringtool.trace.dashboard.tui.TraceTui`, rich ``Live`` on
the alternate screen, one refresh a second) runs with a pseudo-terminal of
:data:`WIDTH` x :data:`HEIGHT` as its stdin and stdout (:class:`PtyTerminal`: the
bench reads and drops what it draws, as a terminal would show it), while the producer
(:mod:`ringtool.bench.trace_proc`) makes a low, paced mixed load: :data:`RATE` opens a
second and a fork + exec every 64 of them (``openexec`` mode). Beside it, in the same
run, the same trace with ``--json`` to a file (the same sources; its cost is the
events', not the drawing), and the dashboard without the producer (``tui_idle``: its
refreshes and loop, no events). For each: the CPU of the trace process per wall second
(user + system of every thread, ``/proc`` schedstat) while the producer runs (or
sleeps), and for the dashboard the bytes it wrote to the terminal per second.

Only numbers; nothing here is asserted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import struct
import termios
import threading
import time
from pathlib import Path
from typing import Any

from ringtool.bench.trace_proc import Loop, TraceChild, task_cpu_ns

#: The terminal's size (columns, rows) and the producer's paced rate (opens a second).
WIDTH, HEIGHT = 120, 40
RATE = 1000.0
#: The phase's runs are this many times the bench's seconds, at least MIN_SECONDS: a
#: few refreshes are not enough to average a per-second cost.
SECONDS_FACTOR, MIN_SECONDS = 3.0, 2.0
#: The trace runs this long past the producer (its start-up is not measured).
DRAIN_S = 1.0


class PtyTerminal:
    """A pseudo-terminal of ``width`` x ``height``: :attr:`fd` is the terminal side
    (the dashboard's stdin and stdout; closed here once the child has it), and a
    thread reads and counts what is written to it (:attr:`bytes`) until closed."""

    def __init__(self, width: int, height: int) -> None:
        self._master, self.fd = os.openpty()
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
        self.bytes = 0
        self._thread = threading.Thread(target=self._drain, name="bench-pty", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while True:
            try:
                got = os.read(self._master, 65536)
            except OSError:  # EIO: the terminal side is closed everywhere
                return
            if not got:
                return
            self.bytes += len(got)

    def release(self) -> None:
        """The child has the terminal side: the bench's copy closed."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def close(self) -> None:
        self.release()
        self._thread.join(timeout=5.0)
        with contextlib.suppress(OSError):
            os.close(self._master)


def _run(binary: Path, cpus: tuple[int, int], seconds: float, tmp: Path, *, tui: bool,
         load: bool = True) -> dict[str, Any]:  # fmt: skip
    producer_cpu, trace_cpu = cpus
    args = ["-c", binary.name, "-d", f"{seconds + DRAIN_S:.3f}", "--interval", "1"]
    term = PtyTerminal(WIDTH, HEIGHT) if tui else None
    try:
        with open(tmp / "tui-cpu.json", "w") as out:
            child = TraceChild(
                args if tui else [*args, "--json"], trace_cpu, stdout=out,
                terminal=term.fd if term is not None else None,
            )  # fmt: skip
        if term is not None:
            term.release()
        try:
            child.wait_ready()
            loop = Loop(binary, "openexec", producer_cpu, seconds, RATE) if load else None
            t0, c0, b0 = time.monotonic(), task_cpu_ns(child.proc.pid), _bytes(term)
            if loop is None:
                time.sleep(seconds)
            result = loop.result() if loop is not None else None
            t1, c1, b1 = time.monotonic(), task_cpu_ns(child.proc.pid), _bytes(term)
            done = child.finish()
        finally:
            child.kill()
    finally:
        if term is not None:
            term.close()
    wall = t1 - t0
    row = {
        "cpu_pct": round((c1 - c0) / (wall * 1e9) * 100, 2),
        "offered_per_s": round(result.iterations / result.seconds) if result else 0,
        "delivered": int(done.summary["events"]),
    }
    if term is not None:
        row["bytes_per_s"] = round((b1 - b0) / wall)
    return row


def _bytes(term: PtyTerminal | None) -> int:
    return term.bytes if term is not None else 0


def tui_cpu(binary: Path, seconds: float, tmp: Path, *, producer_cpu: int, trace_cpu: int
            ) -> dict[str, Any]:  # fmt: skip
    """The phase's row (see the module doc): the dashboard's and ``--json``'s CPU % of
    one CPU at :data:`RATE` opens a second, and the idle dashboard's, run after run in
    this order, each :data:`SECONDS_FACTOR` times ``seconds``."""
    secs = max(seconds * SECONDS_FACTOR, MIN_SECONDS)
    cpus = (producer_cpu, trace_cpu)
    tui = _run(binary, cpus, secs, tmp, tui=True)
    json_ = _run(binary, cpus, secs, tmp, tui=False)
    idle = _run(binary, cpus, secs, tmp, tui=True, load=False)
    return {
        "bench": "trace-tui-cpu", "size": f"{WIDTH}x{HEIGHT}", "refresh_s": 1.0,
        "offered_per_s": tui["offered_per_s"],
        "tui_cpu_pct": tui["cpu_pct"], "json_cpu_pct": json_["cpu_pct"],
        "tui_idle_cpu_pct": idle["cpu_pct"],
        "tui_bytes_per_s": tui["bytes_per_s"],
        "tui_delivered": tui["delivered"], "json_delivered": json_["delivered"],
        "seconds": secs,
    }  # fmt: skip


__all__ = ["HEIGHT", "RATE", "WIDTH", "PtyTerminal", "tui_cpu"]
