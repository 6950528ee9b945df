"""The consumer's edge set (ringtool.readers.poller): readable once per wakeup a real
ring gives, not while records sit unread -- what lets the trace's pacing sleep through
a trickle and still wake for a burst (ringtool.trace.reading.pacing)."""

from __future__ import annotations

import os
import select

import pytest

from ringtool.readers.ringbuf_group import RingBufGroup
from tests.helpers.producers import GROUP_DTYPE, GroupProducer

pytestmark = pytest.mark.kernel


def _readable(fd: int, timeout_s: float) -> bool:
    return bool(select.select([fd], [], [], timeout_s)[0])


def test_the_edge_set_reports_wakeups_not_data() -> None:
    cpu = min(os.sched_getaffinity(0))
    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=16 * 4096)
    prod = GroupProducer(group)
    rb = group.consumer()
    try:
        edge, level = rb.edge_fd(), rb.epoll_fd()
        assert not _readable(edge, 0)
        prod.emit(1, cpu)  # into an empty ring: the kernel wakes the readers (flags 0)
        assert _readable(edge, 5)
        rb.clear_edges()
        assert not _readable(edge, 0), "the edge set stayed readable after its wakeup was taken"
        assert _readable(level, 0)  # the record is there: the consumer's own set says so
        prod.emit(3, cpu)  # behind an unread record: the kernel wakes nobody
        assert not _readable(edge, 0)
        assert len(rb.read_batch(GROUP_DTYPE)) == 4
        prod.emit(1, cpu)  # at the consumer position again: a wakeup
        assert _readable(edge, 5)
        assert len(rb.read_batch(GROUP_DTYPE)) == 1
    finally:
        rb.close()
        prod.close()
        group.close()
