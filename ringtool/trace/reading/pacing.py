"""Batch pacing: let records gather into batches before the trace reads its rings.

A BPF ring buffer's poll reports it readable whenever it holds *any* record, whatever
the adaptive wakeups (bpf/percpu_ringbuf.h) decided: a reader that polls as soon as it
has drained finds a few hundred records each time under a steady load (measured: 200
per read at 225 k opens/s), and the per-read costs (a numpy batch, the stats, the
output's per-batch work) then dominate the per-event cost.

:meth:`BatchPacer.pause`, called before the poll, sleeps in short slices (on the
caller's other fds only: a key press or a stop signal still ends it at once) while the
fullest ring is non-empty but below :data:`PACE_FILL` and the last read was less than
``max_latency_s`` ago. So a record is still read at most ``max_latency_s`` after the
previous read (when that time comes with records in the rings, the caller reads at
once: a poll would not return for them, since below the adaptive wakeup's threshold the
kernel wakes nobody), a filling ring is polled as soon as it reaches ``PACE_FILL`` of
its size (an eighth: a rate 8 times the current one between two checks would be
needed to fill it), and an empty ring costs nothing: the poll sleeps until the
kernel's wakeup.
Slices double from :data:`FIRST_SLICE_S`, so a trickle of records costs a handful of
wakeups per ``max_latency_s``, not one per record.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Sequence

PACE_FILL = 0.125
FIRST_SLICE_S = 0.001
MAX_SLICE_S = 0.008


class BatchPacer:
    """Paces reads of rings whose fullest fill ``fill()`` gives (0..1); see the module doc."""

    def __init__(self, fill: Callable[[], float], max_latency_s: float) -> None:
        self.fill = fill
        self.max_latency_s = max_latency_s
        self.last_read = time.monotonic()
        self.pauses = 0  # slices slept (for tests and benchmarks)

    def read_done(self) -> None:
        """The caller just drained the rings: the latency bound counts from now."""
        self.last_read = time.monotonic()

    def pause(self, timeout_s: float, fds: Sequence[int]) -> list[int] | None:
        """Sleep while records gather (see the module doc), at most ``timeout_s``.
        Returns the ready ``fds`` if one became readable meanwhile; ``[]`` when the time
        ran out with records in the rings (read them now, without a poll); else None
        (poll the rings now: they are empty, or at :data:`PACE_FILL`)."""
        now = time.monotonic()
        end = min(now + timeout_s, self.last_read + self.max_latency_s)
        slice_s = FIRST_SLICE_S
        while now < end:
            fill = self.fill()
            if fill <= 0.0 or fill >= PACE_FILL:
                return None
            self.pauses += 1
            ready, _, _ = select.select(list(fds), [], [], min(slice_s, end - now))
            if ready:
                return list(ready)
            slice_s = min(2 * slice_s, MAX_SLICE_S)
            now = time.monotonic()
        fill = self.fill()
        return [] if 0.0 < fill < PACE_FILL else None


__all__ = ["FIRST_SLICE_S", "MAX_SLICE_S", "PACE_FILL", "BatchPacer"]
