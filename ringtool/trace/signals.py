"""SIGINT/SIGTERM for the trace loop: they set a flag and wake the loop's wait instead
of raising, so the loop ends between batches and the summary always matches what was
written."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any


class StopSignals:
    """SIGINT/SIGTERM set :attr:`stopped` instead of raising, and wake the loop's
    ``select`` through ``signal.set_wakeup_fd`` (:meth:`fileno`). Only installed
    from the main thread (elsewhere signals keep their handlers); the old handlers
    and wakeup fd come back on exit."""

    def __init__(self) -> None:
        self.stopped = False
        self._r, self._w = os.pipe()
        os.set_blocking(self._r, False)
        os.set_blocking(self._w, False)
        self._old: dict[int, Any] = {}
        self._old_fd = -1

    def _handler(self, signum: int, frame: object) -> None:
        self.stopped = True

    def fileno(self) -> int:
        return self._r

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._old[sig] = signal.signal(sig, self._handler)
            self._old_fd = signal.set_wakeup_fd(self._w, warn_on_full_buffer=False)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._old:
            signal.set_wakeup_fd(self._old_fd)
            for sig, handler in self._old.items():
                signal.signal(sig, handler)
        os.close(self._r)
        os.close(self._w)


__all__ = ["StopSignals"]
