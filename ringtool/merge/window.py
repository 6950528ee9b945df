"""A bounded reorder window on top of a merger: hold events up to W µs of event time so
late arrivals from another buffer (or the same shared buffer) still come out in order.

Contract. Timestamps are nanoseconds. The *watermark* is the newest timestamp seen
so far (from the merger, or given by :meth:`ReorderWindow.advance`) minus W. An event
is delivered once its timestamp is at or below the watermark; events are delivered in
(timestamp, arrival) order. So an event that arrives at most W ns behind the newest
event seen before it is never delivered out of order; later ones are delivered as soon
as possible and counted as out of order.

Held events are only released by newer timestamps: when the stream goes quiet, call
:meth:`advance` with the current time of the timestamp clock (e.g.
``time.monotonic_ns()`` for ``bpf_ktime_get_ns()`` stamps), or :meth:`flush` at the end.
W = 0 holds nothing back: the plain merger's order.
"""

from __future__ import annotations

from collections.abc import Iterator
from heapq import heappop, heappush
from typing import TypeVar

from ringtool.errors import ArgumentError
from ringtool.merge.algorithms import Merger, MergeStats, _Accounting

T = TypeVar("T")


class ReorderWindow(_Accounting[T]):
    """Wraps ``inner`` (a default or optimized merger) with a ``window_us`` window.

    ``stats`` describe what the window delivers; ``inner.stats`` what it received.
    """

    __slots__ = ("_held", "_inner", "_seq", "_watermark_ts", "_window_ns")

    def __init__(self, inner: Merger[T], window_us: float) -> None:
        if (
            isinstance(window_us, bool)
            or not isinstance(window_us, int | float)
            or not 0 <= window_us < 2**53
        ):
            raise ArgumentError(f"window_us must be a finite number >= 0, not {window_us!r}")
        super().__init__(inner.buffers)
        self._inner = inner
        self._window_ns = round(window_us * 1000)
        # (timestamp, arrival seq, buffer id, event): seq keeps equal stamps FIFO.
        self._held: list[tuple[int, int, int, tuple[int, T]]] = []
        self._seq = 0
        self._watermark_ts = -(1 << 80)  # newest timestamp seen (before subtracting W)

    @property
    def inner(self) -> Merger[T]:
        """The merger this window reads from."""
        return self._inner

    @property
    def window_ns(self) -> int:
        """W, the window in ns of event time: an event is held until one at least W newer has
        been seen (or :meth:`advance`/:meth:`flush`)."""
        return self._window_ns

    @property
    def stats(self) -> MergeStats:
        """What the window delivered (:class:`MergeStats`); ``held`` is what it holds now,
        ``rebuilds`` the inner merger's."""
        inner = self._inner.stats
        return self._snapshot(rebuilds=inner.rebuilds, held=len(self._held))

    def advance(self, now_ns: int) -> None:
        """Tell the window that the timestamp clock reached ``now_ns``: events older
        than ``now_ns - W`` become deliverable even if no newer event came."""
        if now_ns > self._watermark_ts:
            self._watermark_ts = now_ns

    def _deliver(self) -> tuple[int, T]:
        ts, _seq, bid, ev = heappop(self._held)
        self._delivering(ts, bid)
        return ev

    def next(self) -> tuple[int, T] | None:
        """The next event whose timestamp is at or below the watermark, pulling from
        the merger as needed; None when every remaining event is still held (or none
        is available)."""
        held = self._held
        inner = self._inner
        while True:
            if held and held[0][0] <= self._watermark_ts - self._window_ns:
                return self._deliver()
            ev = inner.next()
            if ev is None:
                return None
            ts = ev[0]
            heappush(held, (ts, self._seq, inner.last_buffer, ev))
            self._seq += 1
            if ts > self._watermark_ts:
                self._watermark_ts = ts

    def flush(self) -> Iterator[tuple[int, T]]:
        """Deliver everything: what the merger has now, then every held event."""
        while (ev := self.next()) is not None:
            yield ev
        while self._held:
            yield self._deliver()

    def close(self) -> None:
        """Settle the merger's sources (see :meth:`Merger.close`). Held events were
        taken from them: :meth:`flush` delivers those, dropping the window loses them
        (``stats.held`` says how many)."""
        self._inner.close()

    def __len__(self) -> int:
        """Events held now."""
        return len(self._held)
