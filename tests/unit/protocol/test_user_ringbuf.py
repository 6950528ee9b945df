"""USER_RINGBUF producer protocol on plain memory, against a model of the kernel's
consumer (no root needed)."""

from __future__ import annotations

import errno
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import ProducerStateError, RecordSizeError, RingFullError
from ringtool.protocol.ringbuf import BUSY_BIT, DISCARD_BIT, record_span
from tests.helpers.builders.user_ringbuf import HandUserRing


@pytest.fixture
def ring() -> Iterator[HandUserRing]:
    r = HandUserRing(4096)
    yield r
    r.close()


def put(r: HandUserRing, payload: bytes) -> int:
    pos = r.producer.reserve(len(payload))
    r.producer.payload(pos, len(payload))[:] = payload
    r.producer.commit(pos)
    return pos


def test_reserve_writes_a_busy_header_and_publishes_the_span(ring: HandUserRing) -> None:
    pos = ring.producer.reserve(5)
    assert pos == 0
    assert ring.header(0) == 5 | BUSY_BIT
    assert ring.producer_pos == record_span(5) == 16
    assert ring.drain() == ([], 0)  # the kernel stops at a busy record
    ring.producer.payload(pos, 5)[:] = b"hello"
    ring.producer.commit(pos)
    assert ring.header(0) == 5
    assert ring.drain() == ([b"hello"], 1)
    assert ring.consumer_pos == 16


def test_discard_sets_the_discard_bit_and_the_kernel_skips_it(ring: HandUserRing) -> None:
    a = ring.producer.reserve(3)
    put(ring, b"kept")
    ring.producer.commit(a, discard=True)
    assert ring.header(a) == 3 | DISCARD_BIT
    assert ring.drain() == ([b"kept"], 1)
    assert ring.consumer_pos == ring.producer_pos


def test_a_later_record_waits_for_an_earlier_busy_one(ring: HandUserRing) -> None:
    a = ring.producer.reserve(4)
    put(ring, b"second")
    assert ring.drain() == ([], 0)
    ring.producer.payload(a, 4)[:] = b"frst"
    ring.producer.commit(a)
    assert ring.drain() == ([b"frst", b"second"], 2)


def test_commit_twice_is_an_error(ring: HandUserRing) -> None:
    pos = put(ring, b"x")
    with pytest.raises(ProducerStateError):
        ring.producer.commit(pos)


def test_full_ring_refuses_then_takes_after_the_drain(ring: HandUserRing) -> None:
    n = 0
    while True:
        try:
            put(ring, bytes([n]) * 100)
        except RingFullError:
            break
        n += 1
    assert n == 4096 // record_span(100)
    before = ring.producer_pos
    with pytest.raises(RingFullError):
        ring.producer.reserve(100)
    assert ring.producer_pos == before  # a refused reserve changes nothing
    got, count = ring.drain()
    assert count == n and got == [bytes([i]) * 100 for i in range(n)]
    put(ring, b"again")
    assert ring.drain() == ([b"again"], 1)


def test_a_record_that_fits_exactly_is_taken_one_byte_more_is_not(ring: HandUserRing) -> None:
    put(ring, b"x" * (2048 - 8))  # half the ring
    with pytest.raises(RingFullError):
        ring.producer.reserve(2048 - 8 + 1)  # its span is 8 bytes too many
    put(ring, b"y" * (2048 - 8))  # exactly the rest
    assert ring.producer_pos - ring.consumer_pos == 4096
    assert ring.producer.free_space() == 0


def test_sizes_the_kernel_refuses_are_refused_first(ring: HandUserRing) -> None:
    with pytest.raises(RecordSizeError):
        ring.producer.reserve(4096 - 7)  # its span would exceed the whole ring
    with pytest.raises(RecordSizeError):
        ring.producer.reserve(-1)
    assert ring.producer.reserve(4096 - 8) == 0  # the whole ring is one record


def test_a_record_that_wraps_is_contiguous_and_read_back_whole() -> None:
    r = HandUserRing(4096, start_pos=4096 * 3 + 4072)  # 24 bytes before the end
    try:
        payload = bytes(range(200))
        put(r, payload)
        assert r.drain() == ([payload], 1)
    finally:
        r.close()


def test_malformed_header_makes_the_kernel_stop_with_einval(ring: HandUserRing) -> None:
    pos = put(ring, b"ok")
    ring.poke_header(pos, 1000)  # claims more than producer_pos - consumer_pos
    assert ring.drain() == ([], -errno.EINVAL)
    assert ring.consumer_pos == 0  # stuck: the kernel does not move past it


def test_write_batch_publishes_what_fits_in_order(ring: HandUserRing) -> None:
    recs = [bytes([i]) * 500 for i in range(10)]
    n = ring.producer.write_batch(recs)
    assert n == 4096 // record_span(500)
    got, count = ring.drain()
    assert got == recs[:n] and count == n
    assert ring.producer.write_batch(recs[n:]) == len(recs) - n
    assert ring.drain()[0] == recs[n:]


# any length, and lengths whose spans are powers of two: rings that fill exactly
lengths = st.one_of(st.integers(0, 1500), st.sampled_from([0, 8, 24, 56, 120, 248, 504, 1016]))
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), lengths),
        st.tuples(st.just("discard"), lengths),
        st.tuples(st.just("batch"), st.lists(lengths, max_size=6)),
        st.tuples(st.just("drain"), st.integers(1, 8)),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops=ops, start=st.integers(0, 2**20).map(lambda v: v * 8))
def test_nothing_lost_or_duplicated_order_kept_space_never_overrun(
    ops: list[tuple[str, object]], start: int
) -> None:
    """Every record a reserve or batch accepted and submitted reaches the kernel once,
    in order; discards never do; producer_pos - consumer_pos never exceeds the ring."""
    r = HandUserRing(4096, start_pos=start)
    sent: list[bytes] = []
    got: list[bytes] = []
    seq = 0

    def payload(n: int) -> bytes:
        nonlocal seq
        seq += 1
        return (seq.to_bytes(4, "little") * (n // 4 + 1))[:n]

    try:
        for op, arg in ops:
            if op in ("put", "discard"):
                p = payload(int(arg))  # type: ignore[call-overload]
                try:
                    pos = r.producer.reserve(len(p))
                except RingFullError:
                    assert r.producer.free_space() < record_span(len(p))
                    continue
                r.producer.payload(pos, len(p))[:] = p
                r.producer.commit(pos, discard=op == "discard")
                if op == "put":
                    sent.append(p)
            elif op == "batch":
                batch = [payload(n) for n in arg]  # type: ignore[attr-defined]
                sent += batch[: r.producer.write_batch(batch)]
            else:
                out, count = r.drain(int(arg))  # type: ignore[call-overload]
                assert count >= 0
                got += out
            assert 0 <= r.producer_pos - r.consumer_pos <= 4096
        got += r.drain()[0]
        assert got == sent
    finally:
        r.close()
