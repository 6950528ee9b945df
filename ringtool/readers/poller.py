"""Waiting for ready rings: one epoll set plus an eventfd that wakes a blocked wait.

Contract: :meth:`Poller.wait` returns the *tags* of ready fds (ringtool uses ring
indices), or an empty list on timeout or wakeup. :meth:`wakeup` may be called from any
thread; :meth:`close` also wakes a waiter, which then sees ``closed``.
"""

from __future__ import annotations

import os
import select
import threading

_WAKE_TAG = -1


class Poller:
    """An epoll set over ring fds, woken by its own eventfd."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._wake_fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        self._epoll.register(self._wake_fd, select.EPOLLIN)
        self._tags: dict[int, int] = {self._wake_fd: _WAKE_TAG}
        self._lock = threading.Lock()
        self.closed = False

    def add(self, fd: int, tag: int) -> None:
        """Watch ``fd`` for readability; ``wait`` reports it as ``tag``."""
        self._tags[fd] = tag
        self._epoll.register(fd, select.EPOLLIN)

    def fileno(self) -> int:
        """The epoll fd, for a caller's own event loop (readable when a ring is)."""
        return self._epoll.fileno()

    def wait(self, timeout_ms: int) -> list[int]:
        """Block up to ``timeout_ms`` (-1 forever, 0 no wait); return ready tags."""
        if self.closed:
            return []
        timeout = -1.0 if timeout_ms < 0 else timeout_ms / 1000.0
        try:
            events = self._epoll.poll(timeout)
        except InterruptedError:  # pragma: no cover - PEP 475 retries for us
            return []
        except (ValueError, OSError):
            if self.closed:  # closed under us by another thread
                return []
            raise
        ready = []
        for fd, _mask in events:
            tag = self._tags.get(fd)
            if tag == _WAKE_TAG:
                try:
                    os.eventfd_read(self._wake_fd)
                except BlockingIOError:
                    pass
            elif tag is not None:
                ready.append(tag)
        return ready

    def wakeup(self) -> None:
        """Make a blocked :meth:`wait` return (from any thread)."""
        if not self.closed:
            try:
                os.eventfd_write(self._wake_fd, 1)
            except OSError:  # closed concurrently
                pass

    def close(self) -> None:
        """Wake any waiter, then release the epoll set and the eventfd. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.wakeup()
            self.closed = True
            self._epoll.close()
            os.close(self._wake_fd)
