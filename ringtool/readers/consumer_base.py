"""What a consumer of several rings is, whatever it reads with: its rings, the lock
that lets one thread drain at a time, the wait (epoll + eventfd wakeup), the
automatic-callback thread, the fork() and close() rules. The reading styles and the
delivery contract are :mod:`ringtool.readers.consumer`'s."""

from __future__ import annotations

import os
import threading
from typing import Any

from ringtool.errors import ConsumerStateError, CorruptRecordError
from ringtool.kernel.closing import Closing
from ringtool.readers.args import UNLIMITED
from ringtool.readers.checkout import Checkout
from ringtool.readers.poller import Poller
from ringtool.readers.record import COUNT_CAP
from ringtool.readers.ring import Ring

__all__ = ["ConsumerBase", "cap"]


def cap(n: int) -> int:
    """A record count as the callback styles return it: at most 2**31-1."""
    return n if n < COUNT_CAP else COUNT_CAP


class ConsumerBase(Closing):
    """The rings, lock and lifecycle of a consumer (see the module doc); its subclass
    :class:`~ringtool.readers.consumer.MultiRingConsumer` adds the reading styles."""

    def __init__(self, *, auto_callback: bool = False, what: str = "consumer") -> None:
        self._what = what
        self._rings: list[Ring] = []
        self._poller = Poller()
        self._lock = threading.RLock()
        self._auto_callback = auto_callback
        self._auto_thread: threading.Thread | None = None
        self._auto_error: BaseException | None = None
        self._closed = False
        self._close_pending = False
        self._depth = 0  # >0 while a drain is running on the lock-owning thread
        self._leased = False  # a lease holds the lock
        self._out: Checkout | None = None  # the batch of a suspended read() generator
        self._deferred: CorruptRecordError | None = None  # raised by the next walk
        self._pid = os.getpid()  # the process the consumer belongs to (see fork() above)

    # --- setup -------------------------------------------------------------------------

    def _add_ring(self, ring: Ring) -> None:
        self._check_open()
        with self._lock:
            self._rings.append(ring)
            self._poller.add(ring.fileno(), ring.index)
        if self._auto_callback and self._auto_thread is None:
            self._auto_thread = threading.Thread(
                target=self._auto_loop, name=f"ringtool-{self._what}-auto", daemon=True
            )
            self._auto_thread.start()

    def _swap_ring(self, index: int, ring: Ring) -> Ring:
        """Put ``ring`` in place of ring ``index`` (same index) and return the old ring,
        untouched: a suspended ``read()`` batch is settled first (it commits on the old
        ring), and a lease or a callback in progress refuses (ConsumerStateError).

        The old ring's fd stays watched until :meth:`unwatch`, edge-triggered
        (:meth:`Poller.watch`): records its producers still commit there wake a wait
        (and make :meth:`epoll_fd` readable) as before, though this consumer no longer
        reads them -- whoever reads the old ring to its end does."""
        self._check_open()
        with self._lock:
            self._begin()
            old = self._rings[index]
            self._poller.watch(old.fileno())
            self._poller.add(ring.fileno(), index)
            self._rings[index] = ring
        return old

    def unwatch(self, ring: Ring) -> None:
        """Stop watching a ring a replace returned (before its fd is closed); nothing
        for a ring not watched, or whose fd one of this consumer's rings reads again
        (a ring moved back)."""
        fd = ring.fileno()
        with self._lock:
            if not self._closed and all(r.fileno() != fd for r in self._rings):
                self._poller.remove(fd)

    def _check_open(self) -> None:
        if self._closed:
            raise ConsumerStateError(f"{self._what} is closed")
        if os.getpid() != self._pid:
            raise ConsumerStateError(
                f"{self._what} was created by process {self._pid}; this is a child after "
                "fork(): create a new consumer in the child (both would deliver every record)"
            )
        exc = self._auto_error
        if exc is not None:
            raise ConsumerStateError(
                f"{self._what}'s automatic-callback thread stopped: {exc!r}"
            ) from exc

    def _begin(self) -> None:
        """Before any walk (lock held): refuse re-entry, settle a suspended read()
        batch, raise an error deferred by the previous walk."""
        if self._depth:
            raise ConsumerStateError(
                f"{self._what}: consuming from inside a callback of the same consumer"
            )
        if self._leased:
            raise ConsumerStateError(f"{self._what}: a lease is out; release it first")
        out, self._out = self._out, None
        if out is not None:
            out.settle()
        exc, self._deferred = self._deferred, None
        if exc is not None:
            raise exc

    def _drain(self, indices: Any, limit: int) -> int:
        total = 0
        with self._lock:
            if self._closed:
                return 0
            self._begin()
            self._depth += 1
            try:
                for i in indices:
                    if total >= limit:
                        break
                    got, stop = self._rings[i].drain(limit - total)
                    total += got
                    if stop < 0:
                        return int(stop)
                    if self._close_pending:
                        break
            finally:
                self._depth -= 1
                if self._depth == 0 and self._close_pending:
                    self._finish_close()
        return cap(total)

    # --- waiting / lifecycle -----------------------------------------------------------

    def epoll_fd(self) -> int:
        """An epoll fd that becomes readable when any ring has data."""
        self._check_open()
        return self._poller.fileno()

    def edge_fd(self) -> int:
        """An epoll fd that becomes readable when a ring's (or a replaced ring's) file
        wakes its readers -- a wakeup, not data: it stays so until :meth:`clear_edges`
        (see :mod:`ringtool.readers.poller`, the edge set)."""
        self._check_open()
        return self._poller.edge_fileno()

    def clear_edges(self) -> None:
        """Take the wakeups :meth:`edge_fd` reports."""
        self._poller.clear_edges()

    def wakeup(self) -> None:
        """Make a blocked poll()/read() return now (safe from any thread)."""
        self._poller.wakeup()

    def _auto_loop(self) -> None:
        try:
            while not self._closed:
                ready = self._poller.wait(-1)
                if ready and not self._closed:
                    self._drain(sorted(set(ready)), UNLIMITED)
        except BaseException as exc:
            self._auto_error = exc

    @property
    def auto_error(self) -> BaseException | None:
        """The exception that stopped the automatic-callback thread, if any."""
        return self._auto_error

    def close(self) -> None:
        """Stop, wake any waiter, unmap the rings. Idempotent; safe from any thread and
        from inside a callback (then it takes effect when the callback returns)."""
        if self._closed:
            return
        self._poller.wakeup()
        if self._depth > 0 and self._lock._is_owned():  # type: ignore[attr-defined]
            self._close_pending = True
            return
        with self._lock:
            self._finish_close()
        t = self._auto_thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=5)

    def _finish_close(self) -> None:
        if self._closed:
            return
        out, self._out = self._out, None
        if os.getpid() != self._pid:
            out = None  # a child after fork() commits nothing (see the module doc)
        try:
            if out is not None:
                out.settle()  # what a suspended read() yielded; the rest stays in the ring
        finally:
            self._closed = True
            self._poller.close()
            for ring in self._rings:
                ring.close()

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran (in this process); every consuming call then raises
        ConsumerStateError."""
        return self._closed

    def take_over(self) -> None:
        """Adopt every ring's shared position as this consumer's own: for a deliberate
        hand-over, when another consumer of the same maps (another ``RingBuffer``,
        libbpf, BCC) read them before this one, one after the other, never at once.
        Without it, this consumer takes their stores for scribbles. Records are read
        from there, so call it only when the shared position is one a consumer
        stored (see the module doc)."""
        self._check_open()
        with self._lock:
            self._begin()
            for ring in self._rings:
                ring.take_over()

    def scribbles(self) -> int:
        """Times, over all rings, another writer changed a shared consumer position
        (each raised :class:`ConsumerPositionError` once; see the module doc)."""
        return sum(ring.scribbles for ring in self._rings)

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
