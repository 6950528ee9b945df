"""The notification wait (docs/kmes.md section 8): sleep in FUTEX_WAIT(V) until a buffer
may have events, without losing a wakeup; notice a dead bridge.

Protocol per reader: store need_wake = 1 (release; pairs with ``Writer.publish``'s
need_wake load), full fence (:func:`store_load_fence`: the store must be visible before
the write_pos re-load), re-check for data, read futex_counter (pairs with
``Writer.publish``'s increment), sleep on it; on wake clear need_wake (relaxed).

Sleeps last at most :data:`WAIT_SLICE` seconds each: with several consumers on one
buffer another may clear need_wake, so a sleeper re-arms it that often; between slices
the writer's pidfd is checked (``Reader.writer_exited``), and a dead writer raises
:class:`KmesBridgeDiedError` once nothing is left to drain.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from typing import Protocol

from ringtool.errors import KmesBridgeDiedError, KmesError
from ringtool.kernel.futex import futex_wait, futex_waitv
from ringtool.kmes import layout as L
from ringtool.kmes.buffer import store_load_fence


class Waiter(Protocol):
    """What a wait needs of a reader (:class:`ringtool.kmes.reader.Reader` is one): its
    buffer's metadata page (bytes and 32-bit words), the futex word's address, its
    private fence lock, its spin time, and its writer's liveness."""

    meta: memoryview
    words32: memoryview
    futex_addr: int
    fence: threading.Lock
    spin: float
    writer_pid: int | None

    def has_data(self) -> bool: ...
    def writer_exited(self) -> bool: ...


#: Longest single futex sleep (bounds the re-arm delay and the writer-death check).
WAIT_SLICE = 0.05


def _arm(r: Waiter) -> int | None:
    """need_wake = 1, fence, re-check: the futex value to sleep on, or None if data."""
    r.meta[L.OFF_NEED_WAKE] = 1  # release store; pairs with Writer.publish's load
    store_load_fence(r.fence)
    if r.has_data():
        r.meta[L.OFF_NEED_WAKE] = 0  # relaxed clear
        return None
    return int(r.words32[L.I_FUTEX_COUNTER])  # pairs with Writer.publish's store


def _disarm(readers: Sequence[Waiter]) -> None:
    for r in readers:
        r.meta[L.OFF_NEED_WAKE] = 0  # relaxed clear (docs/kmes.md §8.1)


def _check_writers(readers: Sequence[Waiter]) -> None:
    """Raise KmesBridgeDiedError if a writer exited (one pidfd check per distinct pid)."""
    seen: set[int | None] = set()
    for r in readers:
        if r.writer_pid not in seen:
            seen.add(r.writer_pid)
            if r.writer_exited() and not any(x.has_data() for x in readers):
                raise KmesBridgeDiedError(r.writer_pid or 0)


def wait_any(readers: Sequence[Waiter], timeout: float | None = None) -> bool:
    """Sleep until any of ``readers`` may have events (futex_waitv over all of them).

    True: some reader may have data; False: ``timeout`` passed. Raises
    :class:`KmesBridgeDiedError` when the bridge has exited and nothing is left.
    """
    deadline = None if timeout is None else time.monotonic() + timeout
    spin = max((r.spin for r in readers), default=0.0)
    while True:
        words = []
        for r in readers:
            val = _arm(r)
            if val is None:
                _disarm(readers)
                return True
            words.append((r.futex_addr, val))
        if spin > 0:  # step 4: optional spin
            spin_end = time.monotonic() + spin
            while time.monotonic() < spin_end:
                if any(r.has_data() for r in readers):
                    _disarm(readers)
                    return True
        left = WAIT_SLICE if deadline is None else min(WAIT_SLICE, deadline - time.monotonic())
        if left <= 0:
            _disarm(readers)
            return False
        try:
            futex_waitv(words, left)
        except KmesError:  # no futex_waitv: sleep on the first, poll the others
            futex_wait(words[0][0], words[0][1], left if len(words) == 1 else min(left, 0.01))
        _disarm(readers)
        if any(r.has_data() for r in readers):
            return True
        _check_writers(readers)
