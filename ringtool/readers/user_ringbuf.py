"""``UserRingBuffer``: ringtool's producer into a BPF_MAP_TYPE_USER_RINGBUF (Linux 6.1).

User space writes records, a BPF program drains them with ``bpf_user_ringbuf_drain()``.
The map is mapped as ``ringbuf_map_mmap_user`` (kernel/bpf/ringbuf.c) allows: the
consumer page read-only at offset 0 (a writable mapping of it is refused with EPERM),
the producer page and the data *twice* read-write at offset one page. The protocol is
:mod:`ringtool.protocol.user_ringbuf`; ``EPOLLOUT`` on the map fd
(``ringbuf_map_poll_user``: some space is free) wakes :meth:`reserve_blocking`.

Styles (libbpf's ``user_ring_buffer__reserve/reserve_blocking/submit/discard``)::

    urb = UserRingBuffer(map_fd)
    r = urb.reserve(16)            # RingFullError when there is no room now
    r.buf[:] = payload             # writable view into the ring, 16 bytes
    urb.submit(r)                  # or urb.discard(r); or r.submit() / r.discard()

    with urb.reserve_blocking(16, timeout_ms=100) as r:   # waits for room
        r.buf[:] = payload         # submitted on exit, discarded on an exception

    urb.write_batch([b"a", b"bc"]) # copies, submits, one producer_pos store; returns
                                   # how many fitted

Thread safety (libbpf's producer is not thread-safe): every method may be called from
any thread. A lock serializes what moves ``producer_pos`` (reserve, write_batch) and
close; submitting or discarding a reservation touches only its own header. A waiting
``reserve_blocking`` does not hold the lock. Several *processes* must not produce into
one map at once (the kernel trusts one ``producer_pos``): they need their own lock
(``ringtool mark`` uses ``flock``). A process killed between reserve and submit leaves
a BUSY record that stops the BPF side for good; :meth:`UserRingBuffer.write` cannot
leave one, and the next producer under that lock clears it with
:meth:`UserRingBuffer.discard_abandoned` (each record carries its writer's pid).

Records are consumed in reservation order: an unsubmitted reservation holds back the
records reserved after it. :meth:`close` releases every view (a reservation not yet
submitted is discarded first); the map fd stays the caller's.
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from ringtool.errors import MapTypeError, ProducerStateError, RecordSizeError, RingFullError
from ringtool.kernel import bpf
from ringtool.kernel.closing import Closing
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.protocol.user_ringbuf import Abandoned, UserRingProducer


class Reservation:
    """One reserved record: ``buf`` is its writable payload; submit or discard it once
    (``with`` submits on a normal exit and discards on an exception)."""

    def __init__(self, owner: UserRingBuffer, pos: int, buf: memoryview) -> None:
        self._owner = owner
        self.pos = pos
        self.buf = buf
        self.done = False

    def submit(self) -> None:
        self._owner.submit(self)

    def discard(self) -> None:
        self._owner.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self.done:
            self._owner._finish(self, discard=exc_type is not None)


class UserRingBuffer(Closing):
    """A producer into the USER_RINGBUF map ``map_fd`` (see the module doc)."""

    def __init__(self, map_fd: int) -> None:
        info = bpf.map_info(map_fd)
        if info.type != bpf.MapType.USER_RINGBUF:
            raise MapTypeError(
                f"fd {map_fd} is a {info.type_name} map, not a USER_RINGBUF: "
                "create the map with BPF_MAP_TYPE_USER_RINGBUF"
            )
        size = info.max_entries
        self.size = size
        self._lock = threading.Lock()
        self._pending: dict[int, Reservation] = {}
        self._fd = os.dup(map_fd)  # ours, for epoll; the caller keeps map_fd
        self._epoll: select.epoll | None = None
        try:
            # ringbuf_map_mmap_user: the consumer page only read-only
            self._cons_map = map_shared(
                self._fd, PAGE_SIZE, offset=0, writable=False, what="user ring consumer page"
            )
            self._prod_map = map_shared(
                self._fd, PAGE_SIZE + 2 * size, offset=PAGE_SIZE, writable=True,
                what="user ring producer page and data",
            )  # fmt: skip
            view = memoryview(self._prod_map)
            self._producer: UserRingProducer | None = UserRingProducer(
                memoryview(self._cons_map), view[:PAGE_SIZE], view[PAGE_SIZE:], size,
                owner=os.getpid(),
            )  # fmt: skip
            view.release()
            # edge-triggered: ringbuf_map_poll_user reports EPOLLOUT while any byte is
            # free, so a level-triggered wait for a bigger record would spin; each drain
            # that frees space wakes rb->waitq, which queues one new edge.
            self._epoll = select.epoll()
            self._epoll.register(self._fd, select.EPOLLOUT | select.EPOLLET)
        except BaseException:
            self._release_maps()
            raise

    # --- producing ---------------------------------------------------------------------

    def _live(self) -> UserRingProducer:
        if self._producer is None:
            raise ProducerStateError("UserRingBuffer is closed")
        return self._producer

    def reserve(self, size: int) -> Reservation:
        """Reserve ``size`` payload bytes now; :class:`RingFullError` when there is no
        room, :class:`RecordSizeError` when the ring can never hold it."""
        if not isinstance(size, int) or isinstance(size, bool):
            raise RecordSizeError(f"size must be an int, not {type(size).__name__}")
        with self._lock:
            p = self._live()
            pos = p.reserve(size)
            r = Reservation(self, pos, p.payload(pos, size))
            self._pending[pos] = r
            return r

    def reserve_blocking(self, size: int, timeout_ms: float) -> Reservation:
        """:meth:`reserve`, waiting up to ``timeout_ms`` (negative: forever) for the BPF
        side to drain enough; :class:`RingFullError` after the timeout."""
        deadline = None if timeout_ms < 0 else time.monotonic() + timeout_ms / 1000.0
        while True:
            try:
                return self.reserve(size)
            except RingFullError:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise RingFullError(
                        f"user ring full for {timeout_ms} ms: {size} bytes asked; is the "
                        "BPF program draining it?"
                    ) from None
                ep = self._epoll
                if ep is None:
                    raise ProducerStateError("UserRingBuffer is closed") from None
                try:
                    ep.poll(-1 if left is None else left)
                except ValueError:  # closed by another thread while waiting
                    raise ProducerStateError("UserRingBuffer is closed") from None

    def submit(self, r: Reservation) -> None:
        """Make the record visible to the BPF side."""
        self._finish(r, discard=False)

    def discard(self, r: Reservation) -> None:
        """Give the record's space back unread (the BPF side skips it)."""
        self._finish(r, discard=True)

    def _finish(self, r: Reservation, *, discard: bool) -> None:
        if r._owner is not self:
            raise ProducerStateError("that reservation belongs to another UserRingBuffer")
        with self._lock:
            if r.done:
                raise ProducerStateError("reservation already submitted or discarded")
            p = self._live()
            r.done = True
            del self._pending[r.pos]
            r.buf.release()
            p.commit(r.pos, discard=discard)

    def write(self, data: bytes | bytearray | memoryview) -> int:
        """Copy one record in and submit it; returns the position just past it (the BPF
        side consumed it once :meth:`consumer_pos` reaches that). The header is final
        before ``producer_pos`` publishes the record: a process killed here leaves no
        BUSY record. :class:`RingFullError` when it does not fit now."""
        with self._lock:
            p = self._live()
            if p.write_batch([data]) != 1:
                raise RingFullError(f"user ring full: a {len(data)}-byte record does not fit now")
            return p.producer_pos

    def consumer_pos(self) -> int:
        """How far the BPF side has consumed (a free-running byte position)."""
        with self._lock:
            return self._live().consumer_pos()

    def discard_abandoned(self) -> list[Abandoned]:
        """Discard the BUSY records a producer killed before submitting left behind;
        returns them (``owner``: that producer's pid). Only under the lock every
        producer process of this map takes, with no reservation of ours open
        (:class:`ProducerStateError` otherwise): any BUSY record is then abandoned."""
        with self._lock:
            if self._pending:
                raise ProducerStateError(
                    "discard_abandoned with a reservation open: submit or discard it first"
                )
            return self._live().discard_abandoned()

    def write_batch(self, records: Sequence[bytes | bytearray | memoryview]) -> int:
        """Copy as many of ``records`` as fit now, in order, submitted together; returns
        how many (the rest: write again after the BPF side drained)."""
        with self._lock:
            return self._live().write_batch(records)

    def free_space(self) -> int:
        """Bytes a reserve may take now (headers and padding included)."""
        with self._lock:
            return self._live().free_space()

    def fileno(self) -> int:
        """The map fd this producer polls (EPOLLOUT: some space is free)."""
        return self._fd

    # --- lifetime ----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """True after :meth:`close`."""
        return self._producer is None

    def close(self) -> None:
        """Discard what is still reserved, unmap, close our fd (idempotent)."""
        with self._lock:
            if self._producer is None:
                return
            for r in list(self._pending.values()):
                r.done = True
                r.buf.release()
                self._producer.commit(r.pos, discard=True)
            self._pending.clear()
            self._producer.release()
            self._producer = None
            self._release_maps()

    def _release_maps(self) -> None:
        for name in ("_cons_map", "_prod_map"):
            m = getattr(self, name, None)
            if m is not None:
                m.close()
        if self._epoll is not None:
            self._epoll.close()
            self._epoll = None
        bpf.close_fd(self._fd)


__all__ = ["Reservation", "UserRingBuffer"]
