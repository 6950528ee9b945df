"""Who reads a KMES bridge: one log line per consumer process attaching and detaching.

The attach protocol has no detach message (a consumer keeps its descriptors and
mappings as long as it likes), so a *consumer* here is a process, identified by the
SO_PEERCRED pid of its attach requests and watched with a pidfd: it is *attached* from
its first served request and *detached* when it exits. Later requests of a live
consumer (re-attaches after a generation switch, idle checks) are only counted. A
process that unmaps the buffers and keeps running counts as attached until it exits.

Threading: :meth:`ConsumerLog.attached` is called from the attach server's thread (it
only opens the pidfd, while the peer's connection is still open, and appends to a
deque); :meth:`ConsumerLog.poll` runs in the bridge's event loop and returns the lines.

The process name comes from ``/proc/PID/comm``, which the process chooses: it goes
through :func:`ringtool.event.safe_text.printable` (no control characters or escape
sequences reach the log). At most :data:`MAX_TRACKED` consumers hold a pidfd at once;
beyond that a consumer is logged as untracked (no detach line), so a flood of
attaching processes cannot exhaust the bridge's descriptors.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ringtool.errors import KernelFeatureError
from ringtool.event.safe_text import printable
from ringtool.kernel.pidfd import ProcessWatch

#: Consumers watched (one pidfd each) at most.
MAX_TRACKED = 256


@dataclass(slots=True)
class Consumer:
    """One attached process."""

    pid: int
    uid: int
    comm: str
    since: float  # monotonic time of its first served request
    watch: ProcessWatch
    requests: int = 1


def proc_comm(pid: int) -> str:
    """``/proc/PID/comm``, printable, or ``?`` if it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/comm").read_bytes()
    except OSError:
        return "?"
    return printable(raw.rstrip(b"\n").decode("utf-8", "backslashreplace")) or "?"


class ConsumerLog:
    """Attach/detach bookkeeping of a bridge's consumers (see the module doc)."""

    def __init__(
        self, clock: Callable[[], float] = time.monotonic, max_tracked: int = MAX_TRACKED
    ) -> None:
        self._clock = clock
        self._max = max_tracked
        self._new: deque[tuple[int, int, ProcessWatch | None]] = deque()
        self.consumers: dict[int, Consumer] = {}
        self.attaches = 0  # consumers seen attaching (tracked or not)
        self.detaches = 0

    def attached(self, pid: int, uid: int) -> None:
        """A served attach request from ``pid`` (attach server thread)."""
        try:
            watch: ProcessWatch | None = ProcessWatch(pid)
        except KernelFeatureError:  # e.g. EMFILE: logged as untracked
            watch = None
        self._new.append((pid, uid, watch))

    def poll(self) -> list[str]:
        """The attach/detach lines since the last call (event loop thread): exits first,
        so a pid number recycled by a new consumer is a detach, then an attach."""
        now = self._clock()
        lines = []
        for c in list(self.consumers.values()):
            if c.watch.exited():
                lines.append(self._detach_line(c, now))
        while self._new:
            pid, uid, watch = self._new.popleft()
            known = self.consumers.get(pid)
            if known is not None and not known.watch.exited():
                known.requests += 1
                if watch is not None:
                    watch.close()
                continue
            if known is not None:  # exited and recycled since the loop above
                lines.append(self._detach_line(known, now))
            lines.append(self._attach_line(pid, uid, watch, now))
        return lines

    def _attach_line(self, pid: int, uid: int, watch: ProcessWatch | None, now: float) -> str:
        self.attaches += 1
        comm = proc_comm(pid)
        if watch is not None and watch.exited():  # comm may be a recycled pid's: not shown
            watch.close()
            self.detaches += 1
            return f"consumer attached and exited: pid {pid}, uid {uid}"
        if watch is None or len(self.consumers) >= self._max:
            if watch is not None:
                watch.close()
            return (
                f"consumer attached: pid {pid} ({comm}), uid {uid} "
                f"(untracked: {len(self.consumers)} consumers watched already)"
            )
        self.consumers[pid] = Consumer(pid, uid, comm, now, watch)
        return f"consumer attached: pid {pid} ({comm}), uid {uid}"

    def _detach_line(self, c: Consumer, now: float) -> str:
        del self.consumers[c.pid]
        c.watch.close()
        self.detaches += 1
        requests = "1 attach request" if c.requests == 1 else f"{c.requests} attach requests"
        return (
            f"consumer detached: pid {c.pid} ({c.comm}) exited after {now - c.since:.1f} s, "
            f"{requests}"
        )

    def close(self) -> None:
        """Close every pidfd (the bridge is stopping)."""
        for c in self.consumers.values():
            c.watch.close()
        self.consumers.clear()
        while self._new:
            watch = self._new.popleft()[2]
            if watch is not None:
                watch.close()


__all__ = ["MAX_TRACKED", "Consumer", "ConsumerLog", "proc_comm"]
