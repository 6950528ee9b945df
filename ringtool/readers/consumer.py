"""The consumer machinery shared by RingBuffer and PerfBuffer: one design, two formats.

A consumer owns a list of rings (one per BPF ring buffer map, or one per perf CPU
buffer). Each ring implements :class:`Ring`; this module adds what is the same for
both: waiting (epoll + eventfd wakeup), the callback / iterator / lease / batch styles,
the automatic-callback thread, count capping, and safe close.

Delivery guarantees (the one place they are written down; docs/library.md sums
them up). A record is *delivered* when ringtool hands it to the caller's code: passed
to a callback, yielded by ``read()``'s iterator, present in a lease, or returned in a
``read_batch`` array. The ring position (RINGBUF ``consumer_pos``, perf ``data_tail``)
covers a record only once it is delivered, so within one consumer every record is
delivered **exactly once**, in ring order, whatever the caller does:

* **callback** (``poll``/``consume``/``consume_n``/``consume_buffer``): a record is
  consumed when its callback is called -- whether it returns, returns a negative
  value (stop: that value is returned) or raises (the position is committed past
  that record and everything before it, then the exception propagates; as in libbpf,
  so a failing record is never delivered again and cannot block the ring).
* **read()**: records are copied out in batches (up to ``READ_CHUNK`` per batch) and
  each ring's part is committed once all of it has been yielded. Leaving the loop
  early -- ``break``, an exception in the loop body, ``close()`` of the generator or
  of the consumer, the generator being garbage-collected -- commits exactly the
  records yielded; the rest are delivered by the next ``read()``/``consume()``.
  The cost: a batch's ring space is freed only once it is yielded, so a slow loop
  holds up to one batch per ring (the producer counts a drop when the ring is full).
* **lease**: every view is delivered when ``lease()`` returns; the positions are
  committed when the lease is released: all of them when the ``with`` block exits,
  *even if it raises* (the block had them all; what it did with them is its own
  business), or only the first ``n`` with ``lease.release(n)`` -- the rest are
  delivered again. A lease dropped unreleased is released (all) when collected.
  ``lease_batch(dtype)`` is the same with numpy arrays that are views of the ring
  instead of memoryviews (counts in records; a perf record that wraps the ring's end
  is a copy, as is a record shorter than the dtype); an array kept past the release
  is not revoked: it shows whatever the producer writes there next.
* **read_batch**: the array's records are committed before it is returned.

Across a crash of the consuming process the guarantee weakens to *at least once* for
the records delivered but not yet committed (a callback drain in progress, the
current ``read()`` batch, an unreleased lease), and *at most once* for a
``read_batch`` array the caller had not yet processed.

Counted, never delivered: events the producer could not write (RINGBUF: the
program's ``<ring>_drops`` per-CPU counter, ``dropped()``; perf: PERF_RECORD_LOST,
``lost()``/``lost_cb``), perf records of other types (``unknown()``). Discarded RINGBUF
records are skipped (the program chose to). A corrupt record raises
:class:`CorruptRecordError` when it is the next one; records before it are delivered
first, and the position stays at it.

Threading contract: any number of threads may call the methods, but rings are drained
under one lock, so at most one thread consumes at a time. A ``read()`` generator holds
the lock only while it copies or commits, never while suspended at ``yield``: any other
consuming call (another thread, another ``read()`` generator, ``consume()`` between two
``next()``) first *settles* the suspended batch -- commits what was yielded, gives the
rest back to the ring -- and then delivers those records itself; the generator drops
its stale copies and goes on with fresh data. A lease holds the lock until released.
Consuming from inside a callback, or while this thread holds a lease, raises
:class:`ConsumerStateError`. ``close()`` from another thread wakes a blocked
``poll``/``read`` and unmaps only after the drain in progress ends; ``close()`` from
inside a callback takes effect when that callback returns. With ``auto_callback``, a
callback that raises stops the background thread (that record is consumed); the
exception is kept in ``auto_error`` and every later call raises ConsumerStateError.

Whose position: each ring walks from the consumer's own private position, never from
the shared word (RINGBUF ``consumer_pos``, perf ``data_tail``), which every process
that maps the ring can write. If another writer changed the shared word, the next
consuming call raises :class:`ConsumerPositionError` before reading anything: the
change is counted (``scribbles()``), the consumer's own position is stored back, and
the call after that goes on from it. So no record is ever delivered that the producer
did not write (a position inside a record would make its bytes read as headers). A
zero-length record a BPF program submitted is data and is delivered.

fork(): a child inherits the consumer (its mappings are shared, its private positions
copied). Were both to consume, both would deliver every record and each would see the
other's stores as scribbles. So the consumer belongs to the process that created it:
in a child every consuming call (``poll``, ``consume*``, ``read``, ``lease*``,
``read_batch``, ``epoll_fd``) raises :class:`ConsumerStateError`; ``close()`` (and
garbage collection) in the child only drops the child's copies of the mappings,
committing nothing. Create a new consumer in the child if it is to read (with the
parent's closed or not used any more). The check is one ``os.getpid()`` per call,
none per record.

Several consumers of one map taking turns (a benchmark comparing readers, a reader
handing over to another) are a deliberate hand-over: ``take_over()`` adopts the
shared positions as the consumer's own before its turn.

Ring-level reading (``rb.ring(i).copy_out``, :func:`ringtool.merge.ring_source`) does
not go through this lock: don't mix it with the consumer's styles on the same ring.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import numpy as np

from ringtool.errors import ConsumerStateError, CorruptRecordError
from ringtool.readers.args import UNLIMITED, check_dtype, check_limit, check_timeout
from ringtool.readers.checkout import Checkout, CopiedRuns
from ringtool.readers.consumer_base import ConsumerBase
from ringtool.readers.record import (
    READ_CHUNK,
    BatchLease,
    Lease,
    LeasePart,
    Record,
)
from ringtool.readers.ring import Ring

__all__ = ["MultiRingConsumer", "Ring"]


class MultiRingConsumer(ConsumerBase):
    """Base class: callback, iterator, lease and batch styles over several rings."""

    # --- callback style ----------------------------------------------------------------

    def poll(self, timeout_ms: int = -1) -> int:
        """Wait up to ``timeout_ms`` (negative: forever, 0 not at all) for data, then
        consume the ready rings. Returns records consumed (capped at 2**31-1), or the
        negative value a callback returned to stop. Raises ConsumerStateError with
        auto_callback.
        """
        self._check_open()
        check_timeout(timeout_ms)
        if self._auto_callback:
            raise ConsumerStateError(
                f"{self._what} was created with auto_callback=True: a background thread "
                "calls the callback; poll() is only for synchronous consumers"
            )
        ready = self._poller.wait(timeout_ms)
        if not ready:
            return 0
        return self._drain(sorted(set(ready)), UNLIMITED)

    def consume(self) -> int:
        """Consume everything available in every ring, without waiting."""
        self._check_open()
        return self._drain(range(len(self._rings)), UNLIMITED)

    def consume_n(self, n: int) -> int:
        """Consume at most ``n`` records across the rings, without waiting."""
        self._check_open()
        return self._drain(range(len(self._rings)), check_limit("n", n))

    # --- iterator / lease / batch ------------------------------------------------------

    def read(self, timeout_ms: float = -1) -> Generator[Record, None, None]:
        """Yield owned :class:`Record` copies as they arrive.

        Drains what is available (one commit per ring per batch, made once that part
        has been yielded), then waits up to ``timeout_ms`` for more; ends when a wait
        finds nothing in time, or on close(). With a negative ``timeout_ms`` it waits
        until close(). Leaving the loop early commits exactly the records yielded
        (see the module doc).
        """
        self._check_open()
        check_timeout(timeout_ms)
        return self._read(timeout_ms)

    def _read(self, timeout_ms: float) -> Generator[Record, None, None]:
        while not self._closed:
            co = self._checkout(READ_CHUNK)
            if co is None:
                ready = self._poller.wait(timeout_ms)
                if not ready and timeout_ms >= 0:
                    return
                continue
            try:
                while True:
                    ring = co.ring
                    idx, cpu = ring.index, ring.cpu
                    # Records are built one at a time as they are yielded: a Record the
                    # caller drops is freed before the next exists, so the cyclic GC
                    # never runs (a list of 4096 Records cost +100 ns a record).
                    for d in co.it:
                        yield Record(d, idx, cpu)
                    with self._lock:
                        if not co.next_group():
                            break
            finally:
                with self._lock:
                    co.settle()  # no-op unless we left early
                    if self._out is co:
                        self._out = None

    def _gather(self, limit: int, take: Callable[[Ring, int], tuple[Any, int]]) -> list[Any]:
        """``take(ring, room)`` -> ``(result, records)`` on each ring in order until
        ``limit`` records (lock held). A corrupt record after other records ends the
        walk: those are delivered and the error is raised by the next walk."""
        out = []
        got = 0
        for ring in self._rings:
            try:
                res, n = take(ring, limit - got)
            except CorruptRecordError as exc:
                if not got:
                    raise
                self._deferred = exc
                break
            out.append(res)
            got += n
            if got >= limit:
                break
        return out

    def _checkout(self, limit: int) -> Checkout | None:
        """Copy up to ``limit`` records out of the rings, uncommitted, as the batch
        of one read() generator (registered so that other calls can settle it)."""

        def take(ring: Ring, room: int) -> tuple[CopiedRuns, int]:
            datas, start, end = ring.copy_pending(room)
            if not datas and end != start:
                ring.advance(end)  # discarded / LOST records only
            return (ring, start, end, datas), len(datas)

        with self._lock:
            if self._closed:
                return None
            self._begin()
            groups = [g for g in self._gather(limit, take) if g[3]]
            if not groups:
                return None
            self._out = Checkout(groups)
            return self._out

    def lease(self, limit: int | None = None) -> Lease:
        """Zero-copy views of the available records across all rings, committed when
        the returned :class:`Lease` is released (use it in a ``with`` block; see the
        module doc for what is committed). Holds the lock until then: no other thread
        consumes while a lease is out.
        """
        self._check_open()
        lim = check_limit("limit", limit)
        views: list[memoryview] = []
        rings: list[int] = []

        def take(ring: Ring, room: int) -> tuple[LeasePart, int]:
            v, start, end = ring.views(room)
            part = (ring, start, end, len(views), len(v))
            views.extend(v)
            rings.extend([ring.index] * len(v))
            return part, len(v)

        return Lease(views, rings, self._take_lease(lim, take), self._unlease)

    def lease_batch(self, dtype: Any, limit: int | None = None) -> BatchLease:
        """The available fixed-size records of all rings as numpy arrays of ``dtype``
        that are views of the mapped rings where the ring's layout allows it (no copy;
        see :class:`BatchLease`), committed once per ring when the lease is released,
        as :meth:`lease` (the same lock and release rules; counts in records)."""
        self._check_open()
        dt = check_dtype(dtype)
        arrays: list[np.ndarray[Any, Any]] = []
        array_rings: list[int] = []
        records = 0

        def take(ring: Ring, room: int) -> tuple[LeasePart, int]:
            nonlocal records
            got, start, end, n = ring.view_batch(dt, room)
            part = (ring, start, end, records, n)
            arrays.extend(got)
            array_rings.extend([ring.index] * len(got))
            records += n
            return part, n

        parts = self._take_lease(check_limit("limit", limit), take)
        return BatchLease(arrays, array_rings, records, parts, self._unlease)

    def _take_lease(
        self, limit: int, take: Callable[[Ring, int], tuple[LeasePart, int]]
    ) -> list[LeasePart]:
        """Take the lock for a lease (held until :meth:`_unlease`) and gather its
        parts; on any error the lock is given back."""
        self._lock.acquire()
        try:
            if self._closed:
                raise ConsumerStateError(f"{self._what} is closed")
            self._begin()
            parts = self._gather(limit, take)
            self._leased = True
        except BaseException:
            self._lock.release()
            raise
        return parts

    def _unlease(self) -> None:
        self._leased = False
        self._lock.release()

    def read_batch(self, dtype: Any, limit: int | None = None) -> np.ndarray[Any, Any]:
        """Decode the available fixed-size records of all rings as a numpy array of
        ``dtype`` (ring order, then record order), committing once per ring. Runs of
        equal-size records are decoded in one vectorised step."""
        self._check_open()
        dt = check_dtype(dtype)
        lim = check_limit("limit", limit)

        def take(ring: Ring, room: int) -> tuple[np.ndarray[Any, Any], int]:
            arr = ring.read_batch(dt, room)
            return arr, len(arr)

        with self._lock:
            if self._closed:
                raise ConsumerStateError(f"{self._what} is closed")
            self._begin()
            parts = self._gather(lim, take)
        if not parts:
            return np.empty(0, dtype=dt)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
