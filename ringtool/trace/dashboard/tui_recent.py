"""The dashboard's recent events per process, kept as raw records (numpy), decoded
only when drawn.

:class:`RecentEvents` keeps, of the record types it is given (exec, open), the newest
:data:`PER_PID` records of each process and :data:`TOTAL` in all, so a quiet process
keeps its events however busy the others are, and however many they are: over the
total, each process keeps its newest ``k`` (the largest ``k`` that fits, a fair share:
busy processes give up records first, a process with fewer than ``k`` keeps them all);
only with more processes than ``total`` are the oldest records forgotten first.

Its cost per batch is a few numpy operations: a type mask, and only when the batch
holds more than ``per_pid`` of them, one stable sort that keeps each pid's newest
``per_pid`` of the batch; the records are copied raw into a buffer of twice ``total``
that is compacted (one sort, the bounds applied) when it is full or read. Nothing is
decoded here: :meth:`RecentEvents.select` returns the records of the processes asked
for, oldest first, and the dashboard decodes the few rows it shows.

Order: a process's records are ordered by ``h.ts`` (the monotonic clock of
``bpf_ktime_get_ns``, comparable across CPUs), ties in order of arrival.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from ringtool.event.decode import Decoder, Event
from ringtool.trace.dashboard.tui_view import ViewState

#: Records kept per process (more than the tallest terminal's recent panel shows).
PER_PID = 128
#: Records kept in all (the oldest forgotten first).
TOTAL = 16384

Records = np.ndarray[Any, Any]


def fair_share(sizes: np.ndarray[Any, Any], cap: int, total: int) -> int:
    """The largest ``k <= cap`` with ``sum(min(size, k)) <= total`` (at least 1)."""
    if int(np.minimum(sizes, cap).sum()) <= total:
        return cap
    lo, hi = 1, cap  # the sum fits at lo (or nothing does), not at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if int(np.minimum(sizes, mid).sum()) <= total:
            lo = mid
        else:
            hi = mid
    return lo


def newest_per_pid(pid: np.ndarray[Any, Any], ts: np.ndarray[Any, Any], per_pid: int,
                   total: int | None = None) -> np.ndarray[Any, Any]:  # fmt: skip
    """Indices of the newest ``per_pid`` records (by ``ts``, then position) of each
    pid, ordered by pid and then ``ts``; given ``total``, fewer per pid where needed
    (:func:`fair_share`) so that at most ``total`` are kept when there are no more
    pids than that."""
    n = len(pid)
    # contiguous copies: a record's fields are strided (and the header packed), and
    # numpy's reductions and sorts on such views are several times slower
    pid, ts = np.ascontiguousarray(pid), np.ascontiguousarray(ts)
    in_order = bool((ts[1:] >= ts[:-1]).all())  # (ts is unsigned: no np.diff)
    if total is not None:
        per_pid = min(per_pid, total)
    if n > per_pid and pid.min() == pid.max():  # one process (a busy one): its newest
        if in_order:
            return np.arange(n - per_pid, n)
        return np.sort(np.argsort(ts, kind="stable")[n - per_pid :])
    # stable sorts: ties keep their positions; in time order already, by pid alone
    order = np.argsort(pid, kind="stable") if in_order else np.lexsort((ts, pid))
    if n <= per_pid:
        return order
    spid = pid[order]
    last = np.flatnonzero(np.append(spid[1:] != spid[:-1], True))  # each pid's last index
    sizes = np.diff(last, prepend=-1)
    if total is not None:
        per_pid = fair_share(sizes, per_pid, total)
    from_end = np.repeat(last, sizes) - np.arange(n)  # 0: the pid's newest
    return order[from_end < per_pid]


class RecentEvents:
    """Bounded recent records per process (see the module doc)."""

    def __init__(
        self, dtype: np.dtype[Any], types: Sequence[int], *, per_pid: int = PER_PID,
        total: int = TOTAL,
    ) -> None:  # fmt: skip
        if per_pid < 1 or total < 1:
            raise ValueError("per_pid and total must be at least 1")
        self.types = list(types)
        self.per_pid, self.total = per_pid, total
        self.dtype = np.dtype(dtype)
        # kept as raw bytes (np.void): numpy copies those whole, several times faster
        # than a structured record field by field
        self._raw = np.dtype((np.void, self.dtype.itemsize))
        self._buf: Records = np.empty(2 * total, self._raw)
        self._n = 0
        self._compact = True  # the buffer's records are within the bounds, in (pid, ts) order

    def __len__(self) -> int:
        self._compaction()
        return self._n

    def add_batch(self, arr: Records) -> None:
        """Keep the records of ``arr`` whose type is one of ``types``."""
        if len(arr) == 0 or not self.types:
            return
        h = arr["h"]  # arr may be a strided view of a ring: only kept records are copied
        t = h["type"]
        mask = t == self.types[0]
        for other in self.types[1:]:
            mask |= t == other
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            return
        if len(idx) > self.per_pid:  # bounded before the copy: only what is kept is copied
            pid, ts = np.ascontiguousarray(h["pid"]), np.ascontiguousarray(h["ts"])
            if len(idx) < len(arr):
                pid, ts = pid[idx], ts[idx]
            idx = idx[newest_per_pid(pid, ts, self.per_pid)]
        rec = arr.view(self._raw)[idx]
        if self._n + len(rec) > len(self._buf):
            self._compaction()
            if self._n + len(rec) > len(self._buf):  # a batch of many processes
                rec = np.concatenate((self._buf[: self._n], rec))  # raw, both
                self._n = 0
                rec = self._bounded(rec)
        self._buf[self._n : self._n + len(rec)] = rec
        self._n += len(rec)
        self._compact = False

    def _bounded(self, rec: Records) -> Records:
        """``rec`` (raw) within the bounds, in (pid, ts) order."""
        h = rec.view(self.dtype)["h"]
        rec = rec[newest_per_pid(h["pid"], h["ts"], self.per_pid, self.total)]
        if len(rec) > self.total:  # more pids than `total`: the newest of all
            ts = np.ascontiguousarray(rec.view(self.dtype)["h"]["ts"])
            rec = rec[np.sort(np.argsort(ts, kind="stable")[len(rec) - self.total :])]
        return rec

    def _compaction(self) -> None:
        if self._compact:
            return
        rec = self._bounded(self._buf[: self._n])
        self._n = len(rec)
        self._buf[: self._n] = rec
        self._compact = True

    def forget(self, pids: Collection[int]) -> None:
        """Drop every record of ``pids`` (processes no longer shown)."""
        if not pids or self._n == 0:
            return
        pid = self._buf[: self._n].view(self.dtype)["h"]["pid"]
        keep = ~np.isin(pid, np.fromiter(pids, np.int64))
        rec = self._buf[: self._n][keep]
        self._n = len(rec)
        self._buf[: self._n] = rec

    def select(self, pids: Collection[int] | None = None) -> Records:
        """The records of ``pids`` (None: of every process), oldest first (a copy)."""
        self._compaction()
        rec = self._buf[: self._n].view(self.dtype)
        if pids is not None:
            rec = rec[np.isin(rec["h"]["pid"], np.fromiter(pids, np.int64, len(pids)))]
        return rec[np.argsort(rec["h"]["ts"], kind="stable")]

    def frozen(self) -> RecentEvents:
        """A copy that does not change (what a paused dashboard draws)."""
        self._compaction()
        copy = RecentEvents(self.dtype, self.types, per_pid=self.per_pid,
                            total=self.total)  # fmt: skip
        copy._buf[: self._n] = self._buf[: self._n]
        copy._n = self._n
        return copy


def shown_events(
    view: ViewState, decoder: Decoder, recent: RecentEvents, tail: list[Event], rows: int
) -> tuple[list[Event], int]:
    """The recent events a dashboard frame of ``rows`` rows shows and how many the
    filter or drill-down of ``view`` has in all: the kept records of the processes it
    shows (decoded here, only the rows shown) merged by time with ``tail``, the
    decoded ones (packets), in the window the view scrolled to."""
    rec = recent.select(view.shown_pids())
    extra = view.matching(tail)
    keys = np.concatenate(((rec["h"]["ts"] + decoder.offset_ns) / 1e9, [e["ts"] for e in extra]))
    order = np.argsort(keys, kind="stable")
    start, end = view.event_window(keys[order].tolist(), rows)
    pick = order[start:end]
    decoded = iter(decoder.decode(rec[pick[pick < len(rec)]]))
    shown = [next(decoded) if i < len(rec) else extra[i - len(rec)] for i in pick.tolist()]
    return shown, len(keys)


__all__ = ["PER_PID", "TOTAL", "RecentEvents", "fair_share", "newest_per_pid", "shown_events"]
