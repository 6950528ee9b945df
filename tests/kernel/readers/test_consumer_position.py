"""A real RINGBUF whose shared consumer_pos another process keeps scribbling.

The scribbler maps the ring's consumer page itself (as any process holding the map
fd can) and moves consumer_pos 24 bytes ahead, onto the ``cpu``/``magic`` words of a
``struct test_event``: read as a header, ``cpu == 0`` is a zero-length record that no
program submitted (what libbpf, and ringtool before, delivered). ringtool must deliver
exactly the records bpf/ringbuf_test.c wrote, each once and in order (the others are
the program's counted drops: a position scribbled past producer_pos makes the kernel
refuse reservations), and raise one ConsumerPositionError per scribble it meets,
counted in ``scribbles()``.
"""

from __future__ import annotations

import os
import signal
import struct
import time
from collections.abc import Iterator

import numpy as np
import pytest

import ringtool
from ringtool.errors import ConsumerPositionError
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from tests.helpers.producers import MAGIC, TEST_EVENT, RingProducer

pytestmark = pytest.mark.kernel
ROUNDS = 200
PER_ROUND = 200  # far below the ring's 8192 records: the producer never laps us


@pytest.fixture
def producer() -> Iterator[RingProducer]:
    p = RingProducer(pages=64)
    yield p
    p.close()


def _scribbler(map_fd: int) -> int:
    """A child process that moves the shared consumer_pos 24 bytes ahead every 2 ms."""
    pid = os.fork()
    if pid:
        return pid
    try:
        page = map_shared(map_fd, PAGE_SIZE, offset=0, writable=True, what="scribbler")
        word = memoryview(page).cast("Q")
        while True:
            word[0] = word[0] + 24
            time.sleep(0.002)
    finally:
        os._exit(0)


def test_a_scribbled_consumer_pos_never_delivers_unwritten_records(
    producer: RingProducer,
) -> None:
    got: list[bytes] = []
    rb = ringtool.RingBuffer(producer.events, lambda v: got.append(bytes(v)))
    caught = 0
    pid = _scribbler(producer.events.map_fd)
    try:
        for _ in range(ROUNDS):
            producer.emit(PER_ROUND, cpu=0)  # cpu 0: the scribbled header reads len 0
            while True:
                try:
                    rb.consume()
                    break
                except ConsumerPositionError:
                    caught += 1
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    while True:  # the scribbler's last store, if any, is met here
        try:
            rb.consume()
            break
        except ConsumerPositionError:
            caught += 1
    try:
        assert {len(r) for r in got} == {TEST_EVENT.itemsize}  # no zero-length record
        events = np.frombuffer(b"".join(got), dtype=TEST_EVENT)
        assert (events["magic"] == MAGIC).all()
        # a consumer_pos scribbled past producer_pos makes the kernel refuse
        # reservations until ours is stored back: those are drops, counted by the program
        seq = events["seq"].tolist()
        assert seq == sorted(set(seq)) and set(seq) <= set(range(1, producer.produced() + 1))
        assert len(seq) + sum(rb.dropped()) == producer.produced()
        assert caught == rb.scribbles() > 0
        assert rb.ring(0).consumer_pos == struct.unpack_from("<Q", _page(producer))[0]
    finally:
        rb.close()


def _page(producer: RingProducer) -> bytes:
    page = map_shared(producer.events.map_fd, PAGE_SIZE, offset=0, writable=False, what="check")
    try:
        return bytes(page[:8])
    finally:
        page.close()
