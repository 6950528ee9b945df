"""Which processes exited, for the dashboard's process table (htop's dimmed rows).

Fed the exit records of each batch (one mask per batch; exits are rare beside opens
and syscalls): an exit record is a thread-group leader's exit (bpf/trace_exec.c), its
``pid`` the process. A process that exited is *exiting* for :data:`LINGER` seconds
(the table dims it), then *gone* (the table leaves it out, unless ``keep`` is set).
A record of the same pid newer than its exit (the pid was reused) makes it live
again: :meth:`Exits.state` compares the exit's ``h.ts`` with the newest record's.

An exit record can be lost (the ring full: the kernel counts it as a drop), so
:meth:`Exits.sweep` also looks for the processes that were quiet in the last interval
in ``/proc`` (as htop does), a bounded number per call, in turns: one no longer there
has exited, as of its newest record.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from typing import Any

import numpy as np

#: Seconds an exited process stays in the table, dimmed.
LINGER = 3.0

#: Quiet processes looked for in /proc per sweep (one stat each).
SWEEP = 256

LIVE, EXITING, GONE = "live", "exiting", "gone"


class Exits:
    """Exit times per pid (see the module doc)."""

    def __init__(self, exit_type: int | None, *, linger: float = LINGER) -> None:
        self.exit_type = exit_type
        self.linger = linger
        self._exits: dict[int, tuple[int, float]] = {}  # pid -> (exit h.ts, seen monotonic)
        self._turn = 0  # where the next sweep starts
        self.proc = "/proc"

    def add_batch(self, arr: np.ndarray[Any, Any], now: float | None = None) -> None:
        """Note the exit records of a ``struct trace_event`` array."""
        if self.exit_type is None or len(arr) == 0:
            return
        h = arr["h"]
        ex = h[h["type"] == self.exit_type]
        if len(ex) == 0:
            return
        seen = time.monotonic() if now is None else now
        for pid, ts in zip(ex["pid"].tolist(), ex["ts"].tolist(), strict=True):
            self._exits[pid] = (ts, seen)

    def sweep(self, quiet: Iterable[tuple[int, int]], now: float | None = None) -> None:
        """Look for :data:`SWEEP` of the ``(pid, newest record's h.ts)`` of processes
        quiet in the last interval in ``/proc`` (in turns from call to call); one that
        is not there exited (pid 0, packets without a task, is never looked for)."""
        todo = [q for q in quiet if q[0] and q[0] not in self._exits]
        if not todo:
            return
        start = self._turn % len(todo)
        batch = (todo[start:] + todo[:start])[:SWEEP]
        self._turn = start + len(batch)
        seen = time.monotonic() if now is None else now
        for pid, newest_ts in batch:
            if not os.path.exists(f"{self.proc}/{pid}"):
                self._exits[pid] = (newest_ts, seen)

    def state(self, pid: int, newest_ts: int, now: float) -> str:
        """:data:`LIVE`, :data:`EXITING` or :data:`GONE` for ``pid`` whose newest
        record has ``h.ts`` ``newest_ts`` (0: not known)."""
        ex = self._exits.get(pid)
        if ex is None or newest_ts > ex[0]:
            return LIVE
        return EXITING if now - ex[1] < self.linger else GONE

    def __len__(self) -> int:
        return len(self._exits)


__all__ = ["EXITING", "GONE", "LINGER", "LIVE", "SWEEP", "Exits"]
