"""The two ways of reading K buffers in timestamp order: a plain scan of every buffer's
head, and an active list of the buffers known to have events, with their heads cached.

Both take the sources in *buffer id* order (ids 0..K-1, contiguous even when CPUs are
offline: the caller maps CPUs to buffers) and deliver one event per :meth:`next`:

``default`` -- every ``next()`` peeks the head of every buffer (K peeks) and delivers
the smallest timestamp; ties go to the lowest buffer id (the scan keeps the first
minimum it finds). A buffer that was empty on one call is looked at again on the next.

``optimized`` -- a *sorted active list* plus a *cache of heads*: the active
list holds the buffers that had an event, ordered by (head timestamp, buffer id), and
each one's head is cached, so ``next()`` reads only the buffer it delivers from.
After delivering, that buffer's new head is read: if there is one, the buffer goes
back into the list at its place; if it is empty, it *leaves* the list. Buffers outside
the list are not looked at until the list is empty; then every buffer is scanned (in
id order) and the list is rebuilt. Cost per event: O(log K) instead of O(K). The sorted
list is kept as a binary heap keyed by (timestamp, buffer id), which hands out exactly
the order a sorted linked list of the active buffers would, ties included.

Same output: on the same input with all data present (nothing arrives while merging),
both deliver the same events in the same order, and the same out-of-order counts.

Out-of-order cases (an event delivered with a timestamp older than the one delivered
just before it), all counted in :class:`MergeStats`:

1. A buffer's later data was not visible yet (the legacy per-device blocks: an
   event beyond the block is read only after the other buffers' blocks).
2. Empty-then-filled race: a buffer is empty when it is looked at and right after gets
   an event older than what other buffers hold. ``default`` delivers it on the next
   call (one event late); ``optimized`` delivers it only when the active list has
   emptied, i.e. after everything the other active buffers hold. Per buffer, order is
   kept; both algorithms accept this, ``optimized`` with a larger delay.
3. One buffer shared by several CPUs: an event can sit in the buffer behind a newer
   one from another CPU (it reserved its space later). Both deliver the buffer's
   events in buffer order, so the older one comes out late: out of order *within* a
   buffer (and so also across buffers). The same happens with one buffer per CPU
   when a nested program (e.g. one run by a page fault inside another) writes its
   event before the event it interrupted has been written.

A bounded reorder window (:mod:`ringtool.merge.window`) fixes all three when the
lateness is at most the window.

Not thread-safe: one thread drives a merger. Pure: no syscalls, only the sources'
``peek``/``pop``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from heapq import heapify, heappop, heapreplace
from typing import Any, Generic, Literal, Protocol, TypeVar

from ringtool.errors import ArgumentError
from ringtool.merge.source import Source

T = TypeVar("T")

#: Before the first delivery nothing counts as "older than the last one".
_NO_TS = -(1 << 80)

Algorithm = Literal["default", "optimized"]


@dataclass(frozen=True, slots=True)
class MergeStats:
    """Counts of one merger so far (a snapshot; ask ``merger.stats`` again for news).

    ``out_of_order`` counts delivered events whose timestamp is older than the event
    delivered just before; ``out_of_order_per_buffer[b]`` those among them that came
    from buffer ``b``. ``max_lateness_ns`` is the largest such gap (a window of at
    least that many ns would have ordered them). ``rebuilds`` counts full scans that
    rebuilt the optimized active list (0 for ``default``). ``held`` is what a reorder
    window holds now (0 without one).
    """

    delivered: int
    out_of_order: int
    out_of_order_per_buffer: tuple[int, ...]
    max_lateness_ns: int
    rebuilds: int = 0
    held: int = 0


class Merger(Protocol[T]):
    """What every merger (and the reorder window) offers."""

    @property
    def last_buffer(self) -> int:
        """Buffer id of the event the last ``next()`` delivered (-1 before any)."""
        ...

    @property
    def stats(self) -> MergeStats:
        """A snapshot of the counts so far (:class:`MergeStats`)."""
        ...

    @property
    def buffers(self) -> int:
        """K, the number of buffers."""
        ...

    def next(self) -> tuple[int, T] | None:
        """The next event in order, or None when none can be delivered now."""
        ...

    def __iter__(self) -> Iterator[tuple[int, T]]:
        """``next()`` until it returns None."""
        ...

    def take(self, limit: int) -> list[tuple[int, T]]:
        """Up to ``limit`` events from ``next()``."""
        ...

    def close(self) -> None:
        """Settle the sources that can (:class:`ringtool.merge.RingSource`): commit
        what was taken, give back what was not. The merger stays usable."""
        ...


class _Accounting(Generic[T]):
    """What the mergers and the window share: the delivery bookkeeping (counts,
    out-of-order accounting, the last buffer) and the loops over :meth:`next`."""

    __slots__ = ("_delivered", "_last_ts", "_max_late", "_ooo", "_ooo_per", "last_buffer")

    def __init__(self, k: int) -> None:
        self._delivered = 0
        self._last_ts = _NO_TS
        self._ooo = 0
        self._ooo_per = [0] * k
        self._max_late = 0
        self.last_buffer = -1

    def _delivering(self, ts: int, bid: int) -> None:
        """Count the delivery of an event stamped ``ts`` from buffer ``bid``."""
        if ts < self._last_ts:
            self._late(ts, bid)
        self._last_ts = ts
        self._delivered += 1
        self.last_buffer = bid

    def _late(self, ts: int, bid: int) -> None:
        """Record one out-of-order delivery (the rare path, out of the hot loop)."""
        self._ooo += 1
        self._ooo_per[bid] += 1
        late = self._last_ts - ts
        if late > self._max_late:
            self._max_late = late

    def _snapshot(self, rebuilds: int = 0, held: int = 0) -> MergeStats:
        return MergeStats(
            delivered=self._delivered,
            out_of_order=self._ooo,
            out_of_order_per_buffer=tuple(self._ooo_per),
            max_lateness_ns=self._max_late,
            rebuilds=rebuilds,
            held=held,
        )

    @property
    def buffers(self) -> int:
        """K, the number of buffers merged."""
        return len(self._ooo_per)

    def next(self) -> tuple[int, T] | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def __iter__(self) -> Iterator[tuple[int, T]]:
        """Deliver events until none is available now (a live source may have more
        later: iterate again)."""
        nxt = self.next
        while (ev := nxt()) is not None:
            yield ev

    def take(self, limit: int) -> list[tuple[int, T]]:
        """Up to ``limit`` events in order (fewer when the sources run dry)."""
        out: list[tuple[int, T]] = []
        nxt = self.next
        append = out.append
        for _ in range(limit):
            ev = nxt()
            if ev is None:
                break
            append(ev)
        return out


class _SourceMerger(_Accounting[T]):
    __slots__ = ("_peeks", "_pops", "_sources")

    def __init__(self, sources: Sequence[Source[T]]) -> None:
        if not sources:
            raise ArgumentError("a merge needs at least one source")
        super().__init__(len(sources))
        self._sources = list(sources)
        self._peeks = [s.peek for s in self._sources]
        self._pops = [s.pop for s in self._sources]

    @property
    def sources(self) -> list[Source[T]]:
        """The sources merged, in buffer id order (buffer ``b`` is ``sources[b]``)."""
        return self._sources

    @property
    def stats(self) -> MergeStats:
        """A snapshot of the counts so far (:class:`MergeStats`); ``rebuilds`` is 0."""
        return self._snapshot()

    def close(self) -> None:
        """Settle every source that can (see :class:`Merger`)."""
        settle_all(self._sources)


class DefaultMerge(_SourceMerger[T]):
    """The default algorithm: K head peeks per event (see the module doc)."""

    __slots__ = ()

    def next(self) -> tuple[int, T] | None:
        """The event with the oldest timestamp among the buffers' heads (ties: the lowest
        buffer id), taken from its source; None when every buffer is empty now.
        Exceptions of a source propagate."""
        best_i = -1
        best_ts = 0
        for i, peek in enumerate(self._peeks):
            ev = peek()
            if ev is not None and (best_i < 0 or ev[0] < best_ts):
                best_ts = ev[0]
                best_i = i
        if best_i < 0:
            return None
        ev = self._pops[best_i]()
        self._delivering(best_ts, best_i)
        return ev


class OptimizedMerge(_SourceMerger[T]):
    """The optimized algorithm: sorted active list + cached heads (module doc).

    ``_active`` is a heap of ``(head timestamp, buffer id, head event)``: one entry per
    buffer in the active list, the entry being that buffer's cached head (buffer ids
    are unique in it, so comparisons never reach the event).
    """

    __slots__ = ("_active", "_error", "_rebuilds")

    def __init__(self, sources: Sequence[Source[T]]) -> None:
        super().__init__(sources)
        self._active: list[tuple[int, int, tuple[int, T]]] = []
        self._rebuilds = 0
        self._error: BaseException | None = None  # a source's, raised by the next next()

    @property
    def stats(self) -> MergeStats:
        """A snapshot of the counts so far (:class:`MergeStats`), ``rebuilds`` included."""
        return self._snapshot(rebuilds=self._rebuilds)

    @property
    def active(self) -> list[int]:
        """Buffer ids in the active list, in delivery order (for tests and debugging)."""
        return [bid for _ts, bid, _ev in sorted(self._active)]

    def _rebuild(self) -> bool:
        """The active list is empty: scan every buffer in id order, cache the heads of
        the non-empty ones and make them the new list. False if all are empty."""
        active = self._active
        for bid, peek in enumerate(self._peeks):
            ev = peek()
            if ev is not None:
                active.append((ev[0], bid, ev))
        if not active:
            return False
        heapify(active)
        self._rebuilds += 1
        return True

    def next(self) -> tuple[int, T] | None:
        """The oldest cached head of the active list, taken from its source; a buffer that
        empties leaves the list and is looked at again only when the list is empty
        (so an event it gets later may come out of order, counted in
        ``stats.out_of_order``). None when every buffer is empty now. A source's
        exception is raised once, by the next call."""
        active = self._active
        if self._error is not None:
            exc, self._error = self._error, None
            raise exc
        if not active and not self._rebuild():
            return None
        ts, bid, ev = active[0]
        self._pops[bid]()
        try:
            head = self._peeks[bid]()
        except Exception as exc:  # ev is taken: deliver it, raise on the next call
            self._error = exc
            head = None
        if head is None:
            heappop(active)  # emptied: leaves the list until the list is empty
        else:
            heapreplace(active, (head[0], bid, head))
        self._delivering(ts, bid)
        return ev


def settle_all(sources: Sequence[Any]) -> None:
    """Call ``settle()`` on each source that has one (every one, even if one fails)."""
    first: BaseException | None = None
    for src in sources:
        settle = getattr(src, "settle", None)
        if settle is not None:
            try:
                settle()
            except Exception as exc:
                first = first or exc
    if first is not None:
        raise first


ALGORITHMS: dict[str, type[_SourceMerger[Any]]] = {
    "default": DefaultMerge,
    "optimized": OptimizedMerge,
}
