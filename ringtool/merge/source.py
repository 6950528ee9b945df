"""What the ordered merge reads: sources of timestamped events, and adapters.

A *source* is one buffer (a per-CPU BPF ring, a perf CPU buffer, a KMES CPU buffer, a
list in a test). The merge only ever looks at its head: :meth:`Source.peek` returns
the oldest event not yet taken (or None when the buffer is empty *right now*) and
:meth:`Source.pop` takes it. An event is a ``(timestamp, payload)`` tuple; the merge
never looks inside the payload and hands the very tuple the source returned back to
its caller (no copy, no new object per event).

Pure Python: no syscalls here. The adapters only call what they are given (a list, a
``fetch(limit)`` callable such as a reader ring's ``copy_out``).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from ringtool.errors import ArgumentError, RecordFormatError

P = TypeVar("P")
T = TypeVar("T")
P_co = TypeVar("P_co", covariant=True)

#: One event: (timestamp in ns, payload). The merge orders on the timestamp only.
Event = tuple[int, P]


class Source(Protocol[P_co]):
    """One buffer as the merge sees it.

    Contract:
    - ``peek()`` returns the head event without taking it, or None when the buffer has
      nothing now (it may have more later: a live ring). Calling it twice without a
      ``pop()`` in between returns the same event (a live source may turn None into an
      event between calls, never the other way round).
    - ``pop()`` takes the head event and returns it; it is only called right after a
      ``peek()`` that returned an event, and returns that same event.
    """

    def peek(self) -> tuple[int, P_co] | None:
        """The head event ``(ts, payload)`` without taking it; None when there is none now."""
        ...

    def pop(self) -> tuple[int, P_co] | None:
        """Take the head event that the last :meth:`peek` returned, and return it."""
        ...


class ListSource(Generic[T]):
    """A source over events held in memory (tests, benchmarks, replays).

    ``events`` is taken as is (not copied, not sorted): the merge sees them in list
    order. :meth:`push` appends one later, as a producer would; :meth:`push_many` many.
    Taken events are dropped in chunks so a long-lived source does not grow forever.
    """

    __slots__ = ("_events", "_i")

    def __init__(self, events: Iterable[tuple[int, T]] = ()) -> None:
        self._events: list[tuple[int, T]] = list(events)
        self._i = 0

    def peek(self) -> tuple[int, T] | None:
        """The next event not taken yet, or None when all were taken (a later push() adds more)."""
        i = self._i
        ev = self._events
        return ev[i] if i < len(ev) else None

    def pop(self) -> tuple[int, T] | None:
        """Take and return the next event; None when all were taken."""
        i = self._i
        ev = self._events
        if i >= len(ev):
            return None
        self._i = i + 1
        return ev[i]

    def push(self, ts: int, payload: T) -> None:
        """Append one event (a producer writing into the buffer)."""
        self.push_many(((ts, payload),))

    def push_many(self, events: Iterable[tuple[int, T]]) -> None:
        """Append events; first drops the taken ones when they are most of the list."""
        if self._i > 4096 and self._i * 2 > len(self._events):
            del self._events[: self._i]
            self._i = 0
        self._events.extend(events)

    def __len__(self) -> int:
        """Events not taken yet."""
        return len(self._events) - self._i


class DequeSource(Generic[T]):
    """A source over a :class:`collections.deque` another party appends to."""

    __slots__ = ("_dq",)

    def __init__(self, dq: deque[tuple[int, T]] | None = None) -> None:
        self._dq: deque[tuple[int, T]] = deque() if dq is None else dq

    @property
    def deque(self) -> deque[tuple[int, T]]:
        """The deque itself: append ``(ts, payload)`` events to it; the merge takes them from the
        left."""
        return self._dq

    def peek(self) -> tuple[int, T] | None:
        """The leftmost event without taking it, or None while the deque is empty."""
        dq = self._dq
        return dq[0] if dq else None

    def pop(self) -> tuple[int, T] | None:
        """Take and return the leftmost event; None while the deque is empty."""
        dq = self._dq
        return dq.popleft() if dq else None


class _BatchSource(Generic[T]):
    """What :class:`FetchSource` and :class:`RingSource` share: events made from raw
    records taken in batches (:meth:`_take`), and the handling of a bad record.

    A record whose ``timestamp``/``payload`` raises is consumed and reported like a
    callback that raises: the records before it are delivered first, then the peek
    that reaches it raises that exception (counted in ``bad``); the ones after it
    follow on the next peek.
    """

    __slots__ = ("_batch", "_buf", "_error", "_i", "_payload", "_stash", "_ts", "bad", "fetched")

    def __init__(
        self,
        timestamp: Callable[[Any], int],
        payload: Callable[[Any], T] | None,
        batch: int,
    ) -> None:
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ArgumentError(f"batch must be an int >= 1, not {batch!r}")
        self._ts = timestamp
        self._payload = payload
        self._batch = batch
        self._buf: list[tuple[int, T]] = []
        self._i = 0
        self._error: BaseException | None = None  # raised once the records before it are taken
        self._stash: Sequence[Any] = ()  # records taken after a bad one
        self.fetched = 0  # records fetched so far (for tests and stats)
        self.bad = 0  # records whose timestamp/payload raised

    def _take(self, limit: int) -> Sequence[Any]:
        """The next raw records, oldest first (empty: none now)."""
        raise NotImplementedError

    def _bad_record(self, index: int) -> None:
        """Raw record ``index`` of the batch raised and is now reported: consume it."""

    def _refill(self) -> bool:
        err = self._error
        if err is not None:
            self._error = None
            self.bad += 1
            self._bad_record(len(self._buf))
            raise err
        raw = self._take(self._batch)
        if not raw:
            return False
        ts = self._ts
        conv = self._payload
        try:
            if conv is None:
                self._buf = [(ts(r), r) for r in raw]
            else:
                self._buf = [(ts(r), conv(r)) for r in raw]
        except Exception:
            self._buf = self._fill_until_bad(raw)
        self._i = 0
        self.fetched += len(raw)
        return bool(self._buf) or self._refill()

    def _fill_until_bad(self, raw: Sequence[Any]) -> list[tuple[int, T]]:
        """The events before the first record that raises; that error is kept for
        when they are taken, and the records after it for the next refill."""
        ts, conv = self._ts, self._payload
        out: list[tuple[int, T]] = []
        for j, r in enumerate(raw):
            try:
                out.append((ts(r), r if conv is None else conv(r)))
            except Exception as exc:
                self._error = exc
                self._stash = raw[j + 1 :]
                self.fetched -= len(self._stash)
                break
        return out

    def peek(self) -> tuple[int, T] | None:
        """The head event without taking it, fetching the next batch when the last one is used up;
        None when the buffer has nothing now."""
        i = self._i
        if i < len(self._buf):
            return self._buf[i]
        if not self._refill():
            return None
        return self._buf[0]

    def pop(self) -> tuple[int, T] | None:
        """Take and return the head event (the one peek() returns); None when there is none now."""
        ev = self.peek()
        if ev is not None:
            self._i += 1
        return ev

    def pending(self) -> int:
        """Fetched records not taken yet."""
        return len(self._buf) - self._i


class FetchSource(_BatchSource[T]):
    """A source over a buffer read in batches: ``fetch(limit)`` returns up to ``limit``
    raw records, oldest first, *consuming* them (a KMES per-CPU reader's ``drain``;
    for ringtool's RINGBUF and perf rings use :class:`RingSource`, which consumes only
    what the merge took).

    ``timestamp(record)`` extracts the event's timestamp (see :func:`u64_at`) and
    ``payload(record)`` what the event carries (the record itself by default). Events
    are ``(timestamp, payload)``. Example: ``FetchSource(kmes_reader.drain,
    operator.attrgetter("timestamp"))`` for a KMES per-CPU reader (its events are
    already decoded).

    Records are fetched only when the ones already fetched are all taken, so the head
    this source shows is always the buffer's real head: the same thing a peek at the
    live ring would show (records behind a fetched batch are newer in that buffer's
    order, so they can't come before it). Fetched records not taken yet live only
    here: keep the source (or its merger) until they are taken.
    """

    __slots__ = ("_fetch",)

    def __init__(
        self,
        fetch: Callable[[int], Sequence[Any]],
        timestamp: Callable[[Any], int],
        *,
        payload: Callable[[Any], T] | None = None,
        batch: int = 256,
    ) -> None:
        super().__init__(timestamp, payload, batch)
        self._fetch = fetch

    def _take(self, limit: int) -> Sequence[Any]:
        stash, self._stash = self._stash, ()
        return stash or self._fetch(limit)


class ReaderRing(Protocol):
    """A ringtool reader ring (``RingBuffer.ring(i)``, ``PerfBuffer.buffers[i]``):
    records copied out without committing, and the commit (see
    :class:`ringtool.readers.ring.Ring`)."""

    def copy_pending(self, limit: int) -> tuple[list[bytes], int, int]:
        """Copies of up to ``limit`` records, the position they start from and the one
        after them. Commits nothing."""
        ...

    def position_after(self, start: int, n: int) -> int:
        """The position just past the first ``n`` records from ``start``."""
        ...

    def advance(self, pos: int) -> None:
        """Commit ``pos``: the records before it are consumed and the producer may
        overwrite them."""
        ...


class RingSource(_BatchSource[bytes]):
    """A source over one ringtool reader ring that consumes only what the merge took.

    A batch is copied out without committing; the ring position is committed when the
    batch has all been taken (at the next fetch) and by :meth:`settle`, which commits
    exactly the records taken and gives the rest back to the ring (they are copied
    again). The merger's ``close()`` -- or garbage collection of this source --
    settles it: an abandoned merge loses nothing. Settle before closing the ring's
    consumer; a source settled after that cannot commit, so the next reader gets its
    taken records again (at least once).
    """

    __slots__ = ("_end", "_ring", "_start")

    def __init__(
        self, ring: ReaderRing, timestamp: Callable[[bytes], int], *, batch: int = 256
    ) -> None:
        super().__init__(timestamp, None, batch)
        self._ring = ring
        self._start = self._end = -1  # the uncommitted batch, -1: none

    def _copy(self, limit: int) -> list[bytes]:
        raw, self._start, self._end = self._ring.copy_pending(limit)
        if not raw:
            self._ring.advance(self._end)  # discarded / LOST records only
            self._start = self._end = -1
        return raw

    def _take(self, limit: int) -> Sequence[Any]:
        self.settle()  # every record of the last batch was taken
        return self._copy(limit)

    def _bad_record(self, index: int) -> None:
        if self._start >= 0:  # the bad record follows the ``index`` good ones
            self._ring.advance(self._ring.position_after(self._start, index + 1))
            self._start = self._end = -1
            self._buf, self._i = [], 0

    def settle(self) -> None:
        """Commit the ring position just past the last record taken; give back the
        records fetched but not taken (the next fetch copies them again)."""
        if self._start < 0:
            return
        start, end, taken = self._start, self._end, self._i
        self._start = self._end = -1
        left = len(self._buf) - taken
        self._buf, self._i = [], 0
        self._stash = ()  # records after a bad one are still in the ring
        if self._error is not None:
            left += 1  # the bad record was not reported yet: give it back too
            self._error = None
        if left:
            self._ring.advance(self._ring.position_after(start, taken))
        else:
            self._ring.advance(end)

    def __del__(self) -> None:
        try:
            self.settle()
        except Exception:  # the ring is closed: nothing left to commit to
            pass


def ring_source(
    ring: ReaderRing,
    timestamp: Callable[[bytes], int],
    *,
    batch: int = 256,
) -> RingSource:
    """A source over one ringtool reader ring; events are ``(timestamp, record bytes)``."""
    return RingSource(ring, timestamp, batch=batch)


def u64_at(offset: int) -> Callable[[bytes | bytearray | memoryview], int]:
    """A timestamp extractor: the little-endian u64 at ``offset`` of a record.

    Records here are private copies (never shared memory), so ``struct`` is fine. For
    a C ``struct { u64 ts; ... }`` pass 0; for a KMES event header pass 8.
    """
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ArgumentError(f"offset must be an int >= 0, not {offset!r}")
    unpack = struct.Struct("<Q").unpack_from
    need = offset + 8

    def ts(record: bytes | bytearray | memoryview) -> int:
        try:
            return int(unpack(record, offset)[0])
        except struct.error:
            raise RecordFormatError(
                f"record of {len(record)} bytes has no u64 timestamp at offset {offset} "
                f"(needs {need} bytes)"
            ) from None

    return ts
