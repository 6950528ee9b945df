"""Whose consumer position: a consumer walks from its own private position, never from
the shared word another process may have changed (RINGBUF ``consumer_pos``, perf
``data_tail``). A changed shared word is an error (counted, our position stored back),
never a place to read records from; zero-length records a producer really wrote stay
data. And a consumer used in a child after ``fork()`` refuses to consume."""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import ConsumerPositionError, ConsumerStateError, CorruptRecordError
from ringtool.protocol.perf import DATA_TAIL_OFF
from tests.helpers.builders.perf import FakeKernel
from tests.helpers.builders.ringbuf import HandConsumer, HandRing


def _drain(ring: HandRing) -> list[bytes]:
    got: list[bytes] = []
    ring.state.drain(lambda v: got.append(bytes(v)), 2**40)
    return got


def test_a_scribble_into_a_payload_delivers_nothing_unwritten() -> None:
    """The audit's case: consumer_pos moved into a payload of zeros reads as a run of
    zero-length records; ringtool raises once, then delivers exactly what was written."""
    ring = HandRing()
    written = [struct.pack("<I", i) + bytes(60) for i in range(10)]
    for p in written:
        assert ring.output(p)
    got = _drain(ring)
    for p in written:
        assert ring.output(p)
    ring.scribble(ring.state.consumer_pos + 16)  # inside the next record's zero payload
    with pytest.raises(ConsumerPositionError) as err:
        _drain(ring)
    assert err.value.found == err.value.expected + 16
    assert ring.state.scribbles == 1
    assert ring.consumer_pos == ring.state.consumer_pos  # our position was stored back
    got += _drain(ring)
    assert got == written * 2
    assert ring.consumer_pos == ring.producer_pos


def test_zero_length_records_a_producer_wrote_are_delivered() -> None:
    ring = HandRing()
    for p in (b"", b"a", b"", b"", b"bc"):
        assert ring.output(p)
    assert _drain(ring) == [b"", b"a", b"", b"", b"bc"]
    assert ring.state.scribbles == 0


def test_every_walk_checks_the_shared_position() -> None:
    ring = HandRing()
    for _ in range(4):
        assert ring.output(b"x" * 8)
    state = ring.state
    walks: tuple[Callable[[], object], ...] = (
        lambda: state.copy_out(state.data, 0, 10),
        lambda: state.views(10),
        lambda: state.decode_batch(np.dtype("u8"), 10),
        lambda: state.copy_pending(state.data, 0, 10),
    )
    for n, walk in enumerate(walks, 1):
        ring.scribble(state.consumer_pos + 8)
        with pytest.raises(ConsumerPositionError):
            walk()
        assert state.scribbles == n


def test_a_new_consumer_starts_from_the_shared_position() -> None:
    ring = HandRing()
    for i in range(3):
        assert ring.output(bytes([i]) * 8)
    _drain(ring)
    assert ring.output(b"z" * 8)
    ring.attach()  # e.g. a restarted reader: the shared word is where it starts
    assert _drain(ring) == [b"z" * 8]


def test_perf_data_tail_scribble_is_refused_and_counted() -> None:
    k = FakeKernel(256)
    for i in range(3):
        k.put(k.sample_rec(struct.pack("<I", i) + bytes(12)))
    got: list[bytes] = []
    k.ring.drain(lambda cpu, v: got.append(bytes(v)[:4]), 1)
    struct.pack_into("<Q", k.page, DATA_TAIL_OFF, k.tail + 8)
    with pytest.raises(ConsumerPositionError):
        k.ring.drain(lambda cpu, v: got.append(bytes(v)[:4]), 100)
    assert k.ring.page.scribbles == 1
    k.ring.drain(lambda cpu, v: got.append(bytes(v)[:4]), 100)
    assert got == [struct.pack("<I", i) for i in range(3)]
    assert k.tail == k.head


# ops: ("out", payload length) | ("drain", limit) | ("scribble", shared value)
_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("out"), st.integers(0, 40)),
        st.tuples(st.just("drain"), st.integers(1, 8)),
        st.tuples(st.just("scribble"), st.integers(-64, 600)),
    ),
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(ops=_OPS)
def test_nothing_delivered_that_was_not_written(ops: list[tuple[str, int]]) -> None:
    """Whatever another writer stores into consumer_pos (aligned or not, ahead or
    behind, inside payloads of zeros), what is delivered is a prefix of what the
    producer wrote, in order; every scribble the consumer met is counted once. A
    scribble ahead lets the producer lap the consumer: that is a CorruptRecordError
    (records lost, said so), never a delivery."""
    ring = HandRing(512)
    written: list[bytes] = []
    got: list[bytes] = []
    expected_scribbles = 0
    seq = 0
    for op, arg in ops:
        if op == "out":
            payload = (struct.pack("<I", seq) + bytes(arg))[: max(arg, 4) if arg else 0]
            seq += 1
            if ring.output(payload):
                written.append(payload)
        elif op == "scribble":
            ring.scribble(max(0, ring.state.consumer_pos + arg))
        else:
            scribbled = ring.consumer_pos != ring.state.consumer_pos
            try:
                ring.state.drain(lambda v: got.append(bytes(v)), arg)
            except ConsumerPositionError:
                assert scribbled
                expected_scribbles += 1
            except CorruptRecordError:
                break  # lapped after a scribble ahead: the rest is lost, not delivered
            else:
                assert not scribbled
        assert got == written[: len(got)]
    assert ring.state.scribbles == expected_scribbles


def test_a_child_after_fork_cannot_consume() -> None:
    ring = HandRing()
    for i in range(4):
        assert ring.output(bytes([i]) * 8)
    got: list[bytes] = []
    c = HandConsumer([ring], lambda v: got.append(bytes(v)))
    try:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: every consuming call is refused, close commits nothing
            code = 0
            try:
                c.consume()
                code = 1
            except ConsumerStateError as exc:
                code = 0 if "fork()" in str(exc) else 2
            c.close()
            os.write(w, bytes([code]))
            os._exit(0)
        os.close(w)
        assert os.read(r, 1) == b"\0"
        os.close(r)
        os.waitpid(pid, 0)
        assert ring.consumer_pos == 0  # the child committed nothing
        assert c.consume() == 4  # the parent still reads everything, once
        assert got == [bytes([i]) * 8 for i in range(4)]
    finally:
        c.close()


def test_take_over_adopts_a_deliberate_hand_over() -> None:
    ring = HandRing()
    first = ring.state
    for i in range(6):
        assert ring.output(bytes([i]) * 8)
    assert len(_drain(ring)) == 6
    second = ring.attach()  # another consumer of the same map takes a turn
    for i in range(3):
        assert ring.output(bytes([10 + i]) * 8)
    assert len(_drain(ring)) == 3
    assert ring.output(b"z" * 8)
    got: list[bytes] = []
    first.take_over()  # our turn again: the other consumer's store is ours now
    first.drain(lambda v: got.append(bytes(v)), 100)
    assert got == [b"z" * 8]
    assert first.scribbles == second.scribbles == 0
