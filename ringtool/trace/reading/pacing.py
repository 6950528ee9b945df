"""Batch pacing: let records gather into batches before the trace reads its rings.

A BPF ring buffer's poll reports it readable whenever it holds *any* record, whatever
the adaptive wakeups (bpf/percpu_ringbuf.h) decided: a reader that polls as soon as it
has drained finds a few hundred records each time under a steady load (measured: 200
per read at 225 k opens/s), and the per-read costs (a numpy batch, the stats, the
output's per-batch work) then dominate the per-event cost.

:meth:`BatchPacer.pause`, called before the poll, sleeps (on the caller's other fds:
a key press or a stop signal still ends it at once) while the fullest ring is non-empty
but below :data:`PACE_FILL` and the last read was less than ``max_latency_s`` ago. So
a record is still read at most ``max_latency_s`` after the previous read (when that
time comes with records in the rings, the caller reads at once: a poll would not
return for them, since below the adaptive wakeup's threshold the kernel wakes nobody),
a filling ring is polled as soon as it reaches ``PACE_FILL`` of its size (an eighth),
and an empty ring costs nothing: the poll sleeps until the kernel's wakeup.

How it sleeps. When the records come fast enough to fill the ring to ``PACE_FILL``
before the latency bound (at the rate since the last read), it looks at the fill in
short slices, doubling from :data:`FIRST_SLICE_S` to :data:`MAX_SLICE_S`. A trickle
that would not is one sleep to the bound, on the rings' *edge set* too
(:meth:`ringtool.readers.consumer_base.ConsumerBase.edge_fd`: readable on a kernel
wakeup, not while records merely sit there), so it costs one wakeup per read, not one
per slice; a burst meanwhile crosses the adaptive wakeup's threshold, the kernel's
wakeup ends the sleep, and the slices take over. Without an edge set it slices always.
"""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Sequence
from typing import Protocol

PACE_FILL = 0.125
FIRST_SLICE_S = 0.001
MAX_SLICE_S = 0.008


class Edges(Protocol):
    """The rings' edge set (:class:`ringtool.readers.ringbuf.RingBuffer` is one)."""

    def edge_fd(self) -> int:
        """Readable once the kernel woke a ring's readers, until :meth:`clear_edges`."""
        ...

    def clear_edges(self) -> None:
        """Take those wakeups."""
        ...


def _none() -> Edges | None:
    return None


class BatchPacer:
    """Paces reads of rings whose fullest fill ``fill()`` gives (0..1); ``edges()``:
    their edge set now (None: none, slices from the start); see the module doc."""

    def __init__(self, fill: Callable[[], float], max_latency_s: float,
                 edges: Callable[[], Edges | None] = _none) -> None:  # fmt: skip
        self.fill = fill
        self.max_latency_s = max_latency_s
        self.edges = edges
        self.last_read = time.monotonic()
        self.pauses = 0  # sleeps (for tests and benchmarks)

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
        edges = self.edges()
        fill = self.fill()
        woken = False  # by the kernel: a burst crossed the wakeup threshold
        slice_s = FIRST_SLICE_S
        while now < end:
            if fill <= 0.0 or fill >= PACE_FILL:
                return None
            self.pauses += 1
            # slices while the rate since the last read would reach the threshold
            # before the bound, or since the kernel's wakeup (the fds alone, as always)
            fast = fill * (end - self.last_read) >= PACE_FILL * (now - self.last_read)
            if edges is None or woken or fast:
                ready, _, _ = select.select(list(fds), [], [], min(slice_s, end - now))
                slice_s = min(2 * slice_s, MAX_SLICE_S)
            else:  # a trickle: to the bound, unless the kernel wakes the rings' readers
                edge = edges.edge_fd()
                ready, _, _ = select.select([*fds, edge], [], [], end - now)
                if edge in ready:  # a wakeup (or one not yet taken: one of this read's)
                    edges.clear_edges()
                    woken = True
                    ready = [fd for fd in ready if fd != edge]
            if ready:
                return list(ready)
            now = time.monotonic()
            fill = self.fill()
        return [] if 0.0 < fill < PACE_FILL else None


__all__ = ["FIRST_SLICE_S", "MAX_SLICE_S", "PACE_FILL", "BatchPacer", "Edges"]
