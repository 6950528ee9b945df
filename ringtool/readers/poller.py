"""Waiting for ready rings: one epoll set plus an eventfd that wakes a blocked wait.

Contract: :meth:`Poller.wait` returns the *tags* of ready fds (ringtool uses ring
indices), or an empty list on timeout, wakeup or a watched fd's wakeup. :meth:`wakeup`
may be called from any thread; :meth:`close` also wakes a waiter, which then sees
``closed``.

A second epoll set, the *edge set* (:meth:`edge_fileno`), holds every fd of the first
edge-triggered: it is readable once per wakeup a ring's file gives after the last
:meth:`clear_edges`, not for as long as a ring holds data. A reader that lets records
gather in a ring (ringtool.trace.reading.pacing) sleeps on it: the kernel's wakeup
ends the sleep, the records already there do not.
"""

from __future__ import annotations

import os
import select
import threading

_WAKE_TAG = -1
_WATCH_TAG = -2


class Poller:
    """An epoll set over ring fds, woken by its own eventfd."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll.register(self._wake_fd, select.EPOLLIN)
        self._edge = select.epoll()
        self._tags: dict[int, int] = {self._wake_fd: _WAKE_TAG}
        self._lock = threading.Lock()
        self._waiters = 0
        self._released = False
        self.closed = False

    def add(self, fd: int, tag: int) -> None:
        """Watch ``fd`` for readability; ``wait`` reports it as ``tag`` (level-triggered:
        as long as it is readable)."""
        self._register(fd, tag, select.EPOLLIN)

    def watch(self, fd: int) -> None:
        """Watch ``fd`` edge-triggered, under no tag: each wakeup its file gives (a
        RINGBUF map: a committed record the kernel wakes readers for) ends a
        :meth:`wait`, which returns no tag for it, and makes :meth:`fileno` readable
        while ``fd`` is readable. Not reported again until its next wakeup, so a
        waiter does not spin on data only somebody else reads (a retiring ring:
        :mod:`ringtool.readers.ringbuf_resize`)."""
        self._register(fd, _WATCH_TAG, select.EPOLLIN | select.EPOLLET)

    def _register(self, fd: int, tag: int, events: int) -> None:
        if fd in self._tags:  # watched already (a ring moved back): same fd, new terms
            self._epoll.modify(fd, events)
        else:
            self._epoll.register(fd, events)
            self._edge.register(fd, select.EPOLLIN | select.EPOLLET)
        self._tags[fd] = tag

    def remove(self, fd: int) -> None:
        """Stop watching ``fd`` (still open); nothing if it is not watched."""
        if self._tags.pop(fd, None) is not None:
            self._epoll.unregister(fd)
            self._edge.unregister(fd)

    def edge_fileno(self) -> int:
        """The edge set's epoll fd (see the module doc): readable once a watched fd's
        file has woken its waiters since the last :meth:`clear_edges`."""
        return self._edge.fileno()

    def clear_edges(self) -> None:
        """Take the edge set's pending wakeups: it is not readable again until the next."""
        self._edge.poll(0)

    def fileno(self) -> int:
        """The epoll fd, for a caller's own event loop (readable when a ring is)."""
        return self._epoll.fileno()

    def wait(self, timeout_ms: float) -> list[int]:
        """Block up to ``timeout_ms`` (negative: forever, 0 no wait); return ready tags."""
        with self._lock:
            if self.closed:
                return []
            self._waiters += 1
        timeout = -1.0 if timeout_ms < 0 else timeout_ms / 1000.0
        try:
            events = self._epoll.poll(timeout)
        finally:
            with self._lock:
                self._waiters -= 1
                last_out = self.closed and self._waiters == 0
            if last_out:
                self._release()
        if self.closed:
            return []
        ready = []
        for fd, _mask in events:
            tag = self._tags.get(fd)
            if tag == _WAKE_TAG:
                try:
                    os.eventfd_read(self._wake_fd)
                except BlockingIOError:
                    pass
            elif tag is not None and tag != _WATCH_TAG:
                ready.append(tag)
        return ready

    def wakeup(self) -> None:
        """Make a blocked :meth:`wait` return (from any thread)."""
        with self._lock:
            if self._released:
                return
            os.eventfd_write(self._wake_fd, 1)

    def close(self) -> None:
        """Wake every waiter and release the epoll set and eventfd. Idempotent.

        The fds are closed by the last waiter to leave :meth:`wait` (closing the
        eventfd under a sleeping epoll_wait would drop its wakeup and leave it
        asleep forever), or right here when nobody waits.
        """
        with self._lock:
            if self.closed:
                return
            self.closed = True
            os.eventfd_write(self._wake_fd, 1)
            idle = self._waiters == 0
        if idle:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
            self._epoll.close()
            self._edge.close()
            os.close(self._wake_fd)
