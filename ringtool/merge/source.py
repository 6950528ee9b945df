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

    def peek(self) -> tuple[int, P_co] | None: ...

    def pop(self) -> tuple[int, P_co] | None: ...


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
        i = self._i
        ev = self._events
        return ev[i] if i < len(ev) else None

    def pop(self) -> tuple[int, T] | None:
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
        return self._dq

    def peek(self) -> tuple[int, T] | None:
        dq = self._dq
        return dq[0] if dq else None

    def pop(self) -> tuple[int, T] | None:
        dq = self._dq
        return dq.popleft() if dq else None


class FetchSource(Generic[T]):
    """A source over a buffer read in batches: ``fetch(limit)`` returns up to ``limit``
    raw records, oldest first, *consuming* them (a ringtool reader ring's ``copy_out``:
    RINGBUF rings, perf CPU buffers, KMES CPU buffers all have one).

    ``timestamp(record)`` extracts the event's timestamp (see :func:`u64_at`) and
    ``payload(record)`` what the event carries (the record itself by default). Events
    are ``(timestamp, payload)``. Examples: ``ring_source(rb.ring(i), u64_at(0))`` for
    a RINGBUF ring, ``ring_source(pb.buffers()[i], u64_at(0))`` for a perf CPU buffer,
    ``FetchSource(kmes_reader.drain, operator.attrgetter("timestamp"))`` for a KMES
    per-CPU reader (its events are already decoded).

    Records are fetched only when the ones already fetched are all taken, so the head
    this source shows is always the buffer's real head: the same thing a peek at the
    live ring would show (records behind a fetched batch are newer in that buffer's
    order, so they can't come before it). What fetched records cost is that the ring
    space is released at fetch time, before the merge delivers them.
    """

    __slots__ = ("_batch", "_buf", "_fetch", "_i", "_payload", "_ts", "fetched")

    def __init__(
        self,
        fetch: Callable[[int], Sequence[Any]],
        timestamp: Callable[[Any], int],
        *,
        payload: Callable[[Any], T] | None = None,
        batch: int = 256,
    ) -> None:
        if batch < 1:
            raise ValueError(f"batch must be >= 1, not {batch}")
        self._fetch = fetch
        self._ts = timestamp
        self._payload = payload
        self._batch = batch
        self._buf: list[tuple[int, T]] = []
        self._i = 0
        self.fetched = 0  # records fetched so far (for tests and stats)

    def _refill(self) -> bool:
        raw = self._fetch(self._batch)
        if not raw:
            return False
        ts = self._ts
        conv = self._payload
        if conv is None:
            self._buf = [(ts(r), r) for r in raw]
        else:
            self._buf = [(ts(r), conv(r)) for r in raw]
        self._i = 0
        self.fetched += len(raw)
        return True

    def peek(self) -> tuple[int, T] | None:
        i = self._i
        if i < len(self._buf):
            return self._buf[i]
        if not self._refill():
            return None
        return self._buf[0]

    def pop(self) -> tuple[int, T] | None:
        ev = self.peek()
        if ev is not None:
            self._i += 1
        return ev

    def pending(self) -> int:
        """Fetched records not taken yet."""
        return len(self._buf) - self._i


class CopyOutRing(Protocol):
    """Anything with a consuming ``copy_out(limit) -> list[bytes]`` (ringtool's rings)."""

    def copy_out(self, limit: int) -> list[bytes]: ...


def ring_source(
    ring: CopyOutRing,
    timestamp: Callable[[bytes], int],
    *,
    batch: int = 256,
) -> FetchSource[bytes]:
    """A source over one ringtool reader ring; events are ``(timestamp, record bytes)``."""
    return FetchSource(ring.copy_out, timestamp, batch=batch)


def u64_at(offset: int) -> Callable[[bytes | bytearray | memoryview], int]:
    """A timestamp extractor: the little-endian u64 at ``offset`` of a record.

    Records here are private copies (never shared memory), so ``struct`` is fine. For
    a C ``struct { u64 ts; ... }`` pass 0; for a KMES event header pass 8.
    """
    if offset < 0:
        raise ValueError(f"offset must be >= 0, not {offset}")
    unpack = struct.Struct("<Q").unpack_from

    def ts(record: bytes | bytearray | memoryview) -> int:
        return int(unpack(record, offset)[0])

    return ts
