"""Moving a buffer of a :class:`~ringtool.readers.ringbuf_group.RingBufGroup` to a ring
of another size while its programs write and one consumer reads: nothing lost, nothing
read twice.

The protocol for buffer ``b`` (one :class:`Switch`), driven by :meth:`RingResizer.step`
from the read loop, with the two slow syscalls in a worker thread:

1. **create** (worker): a new RINGBUF of the new size (``group.new_ring``; a large
   ring's pages take tens of ms to allocate).
2. **map** (read loop): the consumer reads ring ``b`` from the new map from now on
   (:meth:`RingBuffer.replace`); the old ring, still mapped, is *retiring*: this object
   reads it (:meth:`RingResizer.read_batch`, :meth:`RingResizer.drain`) before the
   consumer reads the new one. Its fd stays in the consumer's epoll set until it is
   retired: the programs write it until the publish returns (tens of ms on a busy
   CPU), and a reader asleep meanwhile is woken by its records as by the new ring's
   -- not by a timeout alone, which a small old ring at a high rate outlasts.
3. **publish** (worker): ``group.swap_ring(b, new)``, BPF_MAP_UPDATE_ELEM on the
   ARRAY_OF_MAPS. A program that starts after it finds the new ring (its
   ``bpf_map_lookup_elem`` reads the slot the update exchanged). A program that looked
   the old ring up before may still reserve and commit there afterwards.
4. **seal** (read loop): the update returned, so no program holds the old ring any more.
   The kernel guarantee relied on: ``map_update_elem()`` calls
   ``maybe_wait_bpf_programs()``, which for ARRAY_OF_MAPS and HASH_OF_MAPS runs
   ``synchronize_rcu()`` after a successful update (kernel/bpf/syscall.c, since Linux
   4.20: "wait for any running non-sleepable BPF programs to complete so that
   userspace, when we return to it, knows that all non-sleepable programs that could
   be running use the new map value"). Non-sleepable programs run inside an RCU
   read-side section (tracepoints: ``trace_call_bpf``), and the verifier makes every
   ``bpf_ringbuf_reserve`` end in a submit or discard before the program returns. So
   once the syscall returns, every record reserved in the old ring is committed or
   discarded: its ``producer_pos`` is final and no record in it stays busy. (The kernel
   keeps the old map alive anyway while this process holds its fd and mapping.)
5. **retire** (read loop): once sealed and read to its end -- the consumer position
   equals the producer position read after the seal -- the old ring is unwatched,
   unmapped and its fd closed.

Every record is read exactly once: each ring has one position, advanced by one reader,
and the old ring is read up to its final ``producer_pos``. The drop counter is the
group's per-CPU map, not a ring's, so drops are counted across a switch as before.

Not covered: *sleepable* programs (the kernel does not wait for those; it would take
``synchronize_rcu_tasks_trace``): don't resize a group that sleepable programs write.

Order within a buffer. :meth:`RingResizer.read_batch` and :meth:`RingResizer.drain`
read the retiring ring while the consumer reads the new one: a record can be read
before an older one of the same buffer while the switch is in flight (a program that
had reserved in the old ring commits after the reader found the old ring at a busy
record; such a program may even be preempted there for a while). The timestamp-ordered
reading uses :class:`BufferSource` instead: it takes a record of the new ring only
while the old ring is empty -- no record, and none being written (a busy header stops
the reader, and the source then waits). With one CPU per buffer and programs that run
with preemption disabled (tracepoint programs: ``trace_call_bpf``), a program on that
CPU that wrote the new ring started after every program there that held the old ring
had ended, so the old ring, empty when looked at, gets no older record afterwards --
except from a program that had looked the old ring up but not yet reserved in it at
that very moment (a window of a few instructions at the swap): such a record comes
late, and the merge counts it out of order. Waiting for the seal instead would hold a
CPU's new records back for the grace period (milliseconds: longer than a reorder
window, so every other CPU's records would come out of order with them).

One switch per buffer at a time. A failed create abandons the switch; a failed
publish maps the old ring back into the consumer (nothing was written to the new one).
The consumer must be the only one reading the group's rings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ringtool.errors import ArgumentError, ConsumerStateError, RingtoolError
from ringtool.merge import RingSource
from ringtool.readers.ringbuf import RingBuffer, RingbufMappedRing
from ringtool.readers.ringbuf_group import RingBufGroup

if TYPE_CHECKING:  # imported where the first resize starts (start-up milliseconds)
    from concurrent.futures import Future, ThreadPoolExecutor


@dataclass
class Switch:
    """One buffer's move to a ring of ``new_bytes``: ``state`` is ``creating``,
    ``publishing``, ``draining`` (sealed, read to its end), then ``done`` or ``failed``
    (``error`` says why); times are ``time.monotonic()``."""

    buffer_id: int
    old_bytes: int
    new_bytes: int
    started: float
    state: str = "creating"
    #: when the new ring was mapped into the consumer, and when the swap returned
    mapped: float | None = None
    sealed: float | None = None
    finished: float | None = None
    error: str | None = None
    _future: Future[int] | None = field(default=None, repr=False)
    _new_fd: int = field(default=-1, repr=False)
    _old_fd: int = field(default=-1, repr=False)


class RingResizer:
    """Resizes the buffers of ``group`` read by ``consumer`` (``group.consumer()``;
    see the module doc). Call :meth:`step` from the read loop and read the retiring
    rings (:meth:`read_batch` or :meth:`drain`) before the consumer; :meth:`close`
    when done (before closing the consumer and the group)."""

    def __init__(self, group: RingBufGroup, consumer: RingBuffer) -> None:
        self.group = group
        self.consumer = consumer
        self._pool: ThreadPoolExecutor | None = None
        self._switches: dict[int, Switch] = {}  # buffer id -> the switch in flight
        self._retiring: dict[int, RingbufMappedRing] = {}  # buffer id -> its old ring

    def busy(self, buffer_id: int) -> bool:
        """True while buffer ``buffer_id`` is being moved."""
        return buffer_id in self._switches

    def resize(self, buffer_id: int, ring_bytes: int) -> Switch | None:
        """Start moving buffer ``buffer_id`` to a ring of ``ring_bytes``; None when a
        switch of it is in flight or it has that size already."""
        if not 0 <= buffer_id < self.consumer.ring_cnt:
            raise ArgumentError(f"buffer {buffer_id!r} is not one of the consumer's rings")
        size = self.group.ring_size(buffer_id)
        if self.busy(buffer_id) or ring_bytes == size:
            return None
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="ringtool-resize")
        sw = Switch(buffer_id, size, ring_bytes, time.monotonic())
        sw._future = self._pool.submit(self.group.new_ring, ring_bytes)
        self._switches[buffer_id] = sw
        return sw

    @property
    def bytes_pending(self) -> int:
        """Bytes of the rings being created now (not in the group's total yet)."""
        return sum(s.new_bytes for s in self._switches.values() if s.state == "creating")

    def step(self) -> list[Switch]:
        """Advance every switch as far as it can go now (never blocks); returns the
        ones that ended (``done`` or ``failed``)."""
        ended: list[Switch] = []
        for sw in list(self._switches.values()):
            if sw.state == "creating":
                self._mapped(sw)
            if sw.state == "publishing":
                self._published(sw)
            if sw.state == "draining":
                self._drained(sw)
            if sw.state in ("done", "failed"):
                sw.finished = time.monotonic()
                del self._switches[sw.buffer_id]
                ended.append(sw)
        return ended

    def _mapped(self, sw: Switch) -> None:
        fut = sw._future
        if fut is None or not fut.done():
            return
        exc = fut.exception()
        if exc is not None:
            self._fail(sw, f"no ring of {sw.new_bytes} bytes: {exc}")
            return
        sw._new_fd = fut.result()
        try:
            old = self.consumer.replace(sw.buffer_id, sw._new_fd)
        except ConsumerStateError:
            return  # a lease is out: again at the next step
        except (RingtoolError, OSError) as exc:
            self.group.release_ring(sw._new_fd)
            self._fail(sw, f"the new ring could not be mapped: {exc}")
            return
        sw._old_fd = self.group.ring_fds[sw.buffer_id]
        self._retiring[sw.buffer_id] = old
        sw.state, sw.mapped = "publishing", time.monotonic()
        assert self._pool is not None
        sw._future = self._pool.submit(self.group.swap_ring, sw.buffer_id, sw._new_fd)

    def _published(self, sw: Switch) -> None:
        fut = sw._future
        if fut is None or not fut.done():
            return
        exc = fut.exception()
        if exc is None:
            sw.state, sw.sealed = "draining", time.monotonic()  # see the module doc, step 4
            return
        try:  # the programs still write the old ring: read it from the consumer again
            new = self.consumer.replace(sw.buffer_id, sw._old_fd)
        except ConsumerStateError:
            return  # a lease is out: again at the next step
        self.consumer.unwatch(new)
        new.close()
        self._retiring.pop(sw.buffer_id).close()  # its fd is the consumer's ring again
        self.group.release_ring(sw._new_fd)
        self._fail(sw, f"the ring could not be swapped in: {exc}")

    def _drained(self, sw: Switch) -> None:
        old = self._retiring[sw.buffer_id]
        if not self.read_out(sw.buffer_id):
            return
        del self._retiring[sw.buffer_id]
        self.consumer.unwatch(old)
        old.close()
        self.group.release_ring(sw._old_fd)
        sw.state = "done"

    def read_out(self, buffer_id: int) -> bool:
        """True when buffer ``buffer_id``'s retiring ring is sealed and read to its end
        (its consumer position at its final producer position): nothing more will come
        from it, the new ring's records may be read (:meth:`step` then retires it)."""
        sw = self._switches.get(buffer_id)
        old = self._retiring.get(buffer_id)
        if sw is None or old is None or sw.state != "draining":
            return old is None
        return old.consumer_pos == old.producer_pos  # producer_pos is final (sealed)

    def finish(self, timeout_s: float = 10.0) -> None:
        """Bring every switch in flight to its seal (waits for the worker; at most
        ``timeout_s``): then the retiring rings get no more records and reading them
        to their end reads everything. For the end of a run, before the last read."""
        deadline = time.monotonic() + timeout_s
        while any(s.state in ("creating", "publishing") for s in self._switches.values()):
            if time.monotonic() >= deadline:
                return
            self.step()
            time.sleep(0.001)

    @staticmethod
    def _fail(sw: Switch, why: str) -> None:
        sw.state, sw.error = "failed", why

    def retiring(self, buffer_id: int) -> RingbufMappedRing | None:
        """The old ring of buffer ``buffer_id`` still being read, or None."""
        return self._retiring.get(buffer_id)

    def read_batch(self, dtype: Any, limit: int) -> np.ndarray[Any, Any]:
        """Up to ``limit`` records of the retiring rings as ``dtype``, committed
        (buffer id order): read them before the consumer's."""
        parts: list[np.ndarray[Any, Any]] = []
        dt = np.dtype(dtype)
        for old in list(self._retiring.values()):
            while limit > 0 and len(arr := old.read_batch(dt, limit)):  # up to a busy one
                limit -= len(arr)
                parts.append(arr)
        if not parts:
            return np.empty(0, dtype=dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def drain(self, limit: int) -> int:
        """Deliver up to ``limit`` records of the retiring rings to the consumer's
        callbacks (the callback style); returns how many."""
        total = 0
        for old in list(self._retiring.values()):
            got, stop = old.drain(limit - total)
            total += got
            if stop < 0 or total >= limit:
                break
        return total

    def close(self, on_error: Callable[[BaseException], None] | None = None) -> None:
        """Wait for the worker, then unmap the retiring rings (records left in them
        are not read: drain first) and give back rings never swapped in."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        for sw in self._switches.values():
            fut = sw._future
            if sw.state == "creating" and fut is not None and fut.exception() is None:
                self.group.release_ring(fut.result())
        self._switches.clear()
        for old in self._retiring.values():
            try:
                self.consumer.unwatch(old)
                old.close()
            except Exception as exc:  # best effort: the group closes the fds anyway
                if on_error is not None:
                    on_error(exc)
        self._retiring.clear()


class BufferSource:
    """A :mod:`ringtool.merge` source over buffer ``buffer_id`` of ``resizer``'s
    consumer that follows its switches: while the buffer's retiring ring holds records,
    or a record still being written (a busy header), only those; the new ring's only
    while the old one is empty (see the module doc for why that keeps the order).
    Events are ``(timestamp(record), record bytes)``, read with a
    :class:`~ringtool.merge.RingSource` (commits only what the merge took)."""

    __slots__ = ("_batch", "_bid", "_resizer", "_ring", "_src", "_ts")

    def __init__(
        self,
        resizer: RingResizer,
        buffer_id: int,
        timestamp: Callable[[bytes], int],
        *,
        batch: int = 256,
    ) -> None:
        self._resizer = resizer
        self._bid = buffer_id
        self._ts = timestamp
        self._batch = batch
        self._ring: RingbufMappedRing | None = None
        self._src: RingSource | None = None

    def _source(self) -> RingSource:
        src = self._src
        if src is not None:
            if src.pending():
                return src  # a fetched batch stays the head until taken (Source contract)
            src.settle()  # all taken: commit, so the position says whether it is read out
        resizer, bid = self._resizer, self._bid
        old = resizer.retiring(bid)
        ring = resizer.consumer.ring(bid)
        if old is not None and not resizer.read_out(bid) and old.consumer_pos != old.producer_pos:
            ring = old  # records, or one in flight: before anything of the new ring
        if src is None or ring is not self._ring:
            self._ring = ring
            src = self._src = RingSource(ring, self._ts, batch=self._batch)
        return src

    def peek(self) -> tuple[int, bytes] | None:
        """The head event, or None when the buffer has nothing to give now.

        A batch of the new ring is taken only if the retiring ring is still empty
        *after* it was fetched: a record the CPU put in the old ring before one fetched
        here was reserved (moved the old ring's producer_pos) before that one was
        committed, so the acquire that saw the commit sees the old ring non-empty; then
        the batch is given back and the old ring's records come first."""
        src = self._source()
        ev = src.peek()
        if ev is None:
            return None
        resizer, bid = self._resizer, self._bid
        old = resizer.retiring(bid)
        if old is None or self._ring is old or resizer.read_out(bid):
            return ev
        if old.consumer_pos == old.producer_pos:
            return ev
        src.settle()  # what was taken stays taken (checked when peeked); the rest given back
        return self._source().peek()

    def pop(self) -> tuple[int, bytes] | None:
        """Take the head event the last :meth:`peek` returned."""
        src = self._src
        return None if src is None else src.pop()

    def settle(self) -> None:
        """Commit what was taken, give back the rest (see RingSource.settle)."""
        if self._src is not None:
            self._src.settle()


__all__ = ["BufferSource", "RingResizer", "Switch"]
