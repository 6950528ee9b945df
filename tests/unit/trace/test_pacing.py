"""Batch pacing of the trace's ring reads (ringtool.trace.reading.pacing): when it sleeps, when
it stops, and that other fds still end it at once. No timing is asserted."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import pytest

from ringtool.trace.reading.pacing import PACE_FILL, BatchPacer


def fills(*values: float) -> Iterator[float]:
    yield from values
    while True:
        yield values[-1]


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    os.close(r)
    os.close(w)


def test_empty_rings_are_left_to_the_kernels_wakeup() -> None:
    p = BatchPacer(lambda: 0.0, max_latency_s=10.0)
    assert p.pause(10.0, []) is None and p.pauses == 0


def test_a_ring_past_the_threshold_is_read_at_once() -> None:
    p = BatchPacer(lambda: PACE_FILL, max_latency_s=10.0)
    assert p.pause(10.0, []) is None and p.pauses == 0


def test_records_gather_until_the_threshold() -> None:
    seq = fills(0.01, 0.05, 0.1, 0.2)
    p = BatchPacer(lambda: next(seq), max_latency_s=10.0)
    assert p.pause(10.0, []) is None
    assert p.pauses == 3  # slept while below PACE_FILL, then let the caller read


def test_the_latency_bound_ends_the_pause_with_a_read() -> None:
    """At the bound the records below the threshold are read at once (``[]``), not
    left to a poll: the kernel wakes nobody for them (adaptive wakeups), so a poll
    would hold them up to its own timeout again."""
    p = BatchPacer(lambda: 0.01, max_latency_s=0.02)
    p.read_done()
    assert p.pause(10.0, []) == []  # returns (never past last read + max_latency)
    assert p.pauses >= 1
    p.last_read -= 1.0  # the bound has passed: no pause at all
    before = p.pauses
    assert p.pause(10.0, []) == [] and p.pauses == before


def test_the_callers_timeout_ends_the_pause_with_a_read() -> None:
    p = BatchPacer(lambda: 0.01, max_latency_s=10.0)
    assert p.pause(0.005, []) == []


def test_another_fd_ends_the_pause_at_once(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.write(w, b"q")  # a key press / a stop signal's wakeup byte
    p = BatchPacer(lambda: 0.01, max_latency_s=10.0)
    assert p.pause(10.0, [r]) == [r] and p.pauses == 1


class PipeEdges:
    """An edge set over a pipe: a byte written is a kernel wakeup; clear_edges takes
    them (the pacer's contract with ringtool.readers.poller's edge set)."""

    def __init__(self, r: int, w: int) -> None:
        self.r, self.w = r, w
        os.set_blocking(r, False)
        self.cleared = 0

    def edge_fd(self) -> int:
        return self.r

    def clear_edges(self) -> None:
        self.cleared += 1
        with contextlib.suppress(BlockingIOError):
            os.read(self.r, 4096)


def test_a_trickle_sleeps_once_to_the_bound_with_an_edge_set(pipe: tuple[int, int]) -> None:
    """Records too slow to reach the threshold before the bound, no wakeup from the
    kernel: one sleep to the bound, not a slice after a slice (the records are read at
    the bound all the same)."""
    edges = PipeEdges(*pipe)
    p = BatchPacer(lambda: 0.01, max_latency_s=0.05, edges=lambda: edges)
    p.last_read = time.monotonic() - 0.04  # 1% in 40 ms: an eighth would take 0.5 s
    assert p.pause(10.0, []) == []
    assert p.pauses == 1 and edges.cleared == 0


def test_a_wakeup_ends_the_sleep_then_the_fill_is_watched(pipe: tuple[int, int]) -> None:
    """The kernel's wakeup (a burst crossed its threshold) ends the long sleep at once,
    is taken, and from then on the fill is looked at in slices until it reaches the
    threshold."""
    r, w = pipe
    edges = PipeEdges(r, w)
    os.write(w, b"!")
    seq = fills(0.01, 0.02, 0.05, PACE_FILL)
    p = BatchPacer(lambda: next(seq), max_latency_s=30.0, edges=lambda: edges)
    p.last_read = time.monotonic() - 10.0  # a trickle so far: a long sleep
    assert p.pause(60.0, []) is None  # returned at the threshold, long before 30 s
    assert edges.cleared == 1 and p.pauses == 3  # the sleep the wakeup ended, 2 slices


def test_a_fast_fill_is_watched_in_slices_without_a_wakeup(pipe: tuple[int, int]) -> None:
    """Records fast enough to reach the threshold before the bound: slices at once, as
    without an edge set (no wait for the kernel's threshold, above an eighth of a
    start ring)."""
    edges = PipeEdges(*pipe)
    seq = fills(0.05, 0.08, 0.1, PACE_FILL)
    p = BatchPacer(lambda: next(seq), max_latency_s=30.0, edges=lambda: edges)
    p.last_read = time.monotonic() - 0.01  # 5% in 10 ms
    assert p.pause(60.0, []) is None
    assert edges.cleared == 0 and p.pauses >= 2
