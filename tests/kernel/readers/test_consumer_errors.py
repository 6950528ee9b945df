"""Every public entry point of RingBuffer / PerfBuffer / RingBufGroup raises a
ringtool error for bad arguments and for use after close (real maps, real kernel)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import ringtool
from ringtool.errors import (
    ArgumentError,
    BufferIndexError,
    ConsumerStateError,
    RingSizeError,
    RingtoolError,
)
from ringtool.readers.ringbuf_group import RingBufGroup
from tests.helpers.producers import PerfProducer, RingProducer

pytestmark = pytest.mark.kernel


@pytest.fixture(scope="module")
def ring() -> Iterator[RingProducer]:
    p = RingProducer(pages=4)
    yield p
    p.close()


def _raises(kind: type[RingtoolError], calls: list[Callable[[], Any]]) -> None:
    for i, call in enumerate(calls):
        with pytest.raises(kind):
            call()
            pytest.fail(f"call {i} did not raise")


def test_perfbuffer_arguments(perf: PerfProducer) -> None:
    ev = perf.events
    _raises(
        ArgumentError,
        [
            lambda: ringtool.PerfBuffer(ev, None, cpus=[99]),
            lambda: ringtool.PerfBuffer(ev, None, cpus=[]),
            lambda: ringtool.PerfBuffer(ev, None, cpus=["0"]),  # type: ignore[list-item]
            lambda: ringtool.PerfBuffer(ev, 5),  # type: ignore[arg-type]
            lambda: ringtool.PerfBuffer(ev, None, lost_cb="x"),  # type: ignore[arg-type]
            lambda: ringtool.PerfBuffer(ev, None, wakeup_events=-1),
        ],
    )
    _raises(
        RingSizeError,
        [
            lambda: ringtool.PerfBuffer(ev, None, page_cnt=2.0),  # type: ignore[arg-type]
            lambda: ringtool.PerfBuffer(ev, None, page_cnt=-4),
            lambda: ringtool.PerfBuffer(ev, None, watermark_bytes=-1),
        ],
    )
    pb = ringtool.PerfBuffer(ev, lambda c, d: None, cpus=[0])
    _raises(
        BufferIndexError,
        [
            lambda: pb.consume_buffer(5),
            lambda: pb.consume_buffer(-1),
            lambda: pb.consume_buffer("0"),  # type: ignore[arg-type]
            lambda: pb.buffer_fd(1),
        ],
    )
    with pytest.raises(IndexError):  # still an IndexError for callers that catch one
        pb.consume_buffer(5)
    _raises(
        ArgumentError,
        [
            lambda: pb.consume_n(-1),
            lambda: pb.read_batch(object),
            lambda: pb.lease(-3),
            lambda: pb.read(timeout_ms="soon"),  # type: ignore[arg-type]
        ],
    )
    buf = pb.buffers[0]
    pb.close()
    _raises(
        ConsumerStateError,
        [
            pb.consume,
            lambda: pb.consume_buffer(0),
            lambda: pb.read(0),
            pb.lease,
            lambda: pb.read_batch("V8"),
            lambda: buf.copy_out(1),
            pb.snapshot,
        ],
    )


def test_ringbuffer_arguments(ring: RingProducer) -> None:
    _raises(ArgumentError, [lambda: ringtool.RingBuffer(ring.events, 3)])  # type: ignore[arg-type]
    rb = ringtool.RingBuffer(ring.events)
    _raises(BufferIndexError, [lambda: rb.ring(1), lambda: rb.ring(-1)])
    _raises(
        ArgumentError,
        [
            lambda: rb.consume_n(-1),
            lambda: rb.read_batch("no such dtype"),
            lambda: rb.read_batch("V8", limit=-1),
            lambda: rb.poll(float("nan")),  # type: ignore[arg-type]
            lambda: rb.add(ring.events, "cb"),  # type: ignore[arg-type]
        ],
    )
    with pytest.raises(ConsumerStateError, match="no callback"):
        rb.consume()  # a ring without a callback is read with read()/lease()
    r0 = rb.ring(0)
    rb.close()
    _raises(
        ConsumerStateError,
        [
            rb.consume,
            lambda: rb.read(0),
            lambda: rb.read_batch("V8"),
            rb.lease,
            lambda: r0.consumer_pos,
            lambda: r0.copy_out(1),
            lambda: rb.add(ring.events),
        ],
    )


def test_ringbufgroup_arguments() -> None:
    _raises(
        ArgumentError,
        [
            lambda: RingBufGroup(cpus_per_buffer=-1),
            lambda: RingBufGroup(cpus=[]),
            lambda: RingBufGroup(cpus=[10**6]),
            lambda: RingBufGroup(cpus=[-1]),
            lambda: RingBufGroup(cpus_per_buffer=1.5),  # type: ignore[arg-type]
        ],
    )
    _raises(
        RingSizeError,
        [lambda: RingBufGroup(ring_bytes=4096.5), lambda: RingBufGroup(ring_bytes=3 * 4096)],  # type: ignore[arg-type]
    )
    group = RingBufGroup(cpus=[0], ring_bytes=4096)
    _raises(ArgumentError, [lambda: group.consumer(callback=7)])  # type: ignore[arg-type]
    group.close()
    _raises(ConsumerStateError, [group.consumer])
