"""RINGBUF record protocol on hand-built rings (no root needed)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from ringtool.errors import CorruptRecordError
from ringtool.protocol.ringbuf import BUSY_BIT, DISCARD_BIT, record_span
from tests.helpers.builders.ringbuf import HandRing


def drain_all(ring: HandRing, limit: int = 2**40) -> list[bytes]:
    got: list[bytes] = []
    ring.state.drain(lambda v: got.append(bytes(v)), limit)
    return got


def output_draining(ring: HandRing, payloads: list[bytes]) -> list[bytes]:
    """Output each payload, draining the ring whenever it is full; everything read."""
    out: list[bytes] = []
    for p in payloads:
        if not ring.output(p):
            out += drain_all(ring)
            assert ring.output(p)
    return out + drain_all(ring)


def test_record_span_pads_header_and_payload_to_8() -> None:
    assert [record_span(n) for n in (0, 1, 7, 8, 9, 16)] == [8, 16, 16, 16, 24, 24]


def test_records_come_out_in_order_and_position_is_committed() -> None:
    ring = HandRing()
    payloads = [bytes([i]) * (i % 13 + 1) for i in range(40)]
    for p in payloads:
        assert ring.output(p)
    assert drain_all(ring) == payloads
    assert ring.consumer_pos == ring.producer_pos


@pytest.mark.parametrize("start", range(0, 4096, 8 * 37))
def test_record_wrapping_the_end_of_the_data_area(start: int) -> None:
    ring = HandRing(4096, start_pos=4096 * 3 + start)
    payloads = [bytes(range(i, i + 100)) for i in range(30)]
    assert output_draining(ring, payloads) == payloads


def test_discarded_records_are_skipped_but_consumed() -> None:
    ring = HandRing()
    keep = []
    for i in range(10):
        pos = ring.reserve(struct.pack("<Q", i))
        assert pos is not None
        ring.commit(pos, discard=i % 3 == 0)
        if i % 3:
            keep.append(struct.pack("<Q", i))
    assert drain_all(ring) == keep
    assert ring.consumer_pos == ring.producer_pos


def test_busy_record_stops_the_walk_and_later_records_wait() -> None:
    ring = HandRing()
    ring.output(b"a" * 8)
    busy = ring.reserve(b"b" * 8)
    assert busy is not None
    ring.output(b"c" * 8)
    assert drain_all(ring) == [b"a" * 8]
    assert ring.consumer_pos == busy  # parked at the busy record, not past it
    assert drain_all(ring) == []  # returns at once: no spinning
    ring.commit(busy)
    assert drain_all(ring) == [b"b" * 8, b"c" * 8]


def test_positions_beyond_2_to_the_32() -> None:
    ring = HandRing(4096, start_pos=2**32 - 24)
    payloads = [struct.pack("<QQ", i, i * 7) for i in range(200)]
    assert output_draining(ring, payloads) == payloads
    assert ring.consumer_pos > 2**32


def test_corrupt_length_raises_with_dump_and_keeps_position() -> None:
    ring = HandRing()
    ring.output(b"x" * 16)
    bad = ring.reserve(b"y" * 16)
    assert bad is not None
    ring.set_header(bad, 5000)  # committed, but longer than the ring
    got: list[bytes] = []
    with pytest.raises(CorruptRecordError) as info:
        ring.state.drain(lambda v: got.append(bytes(v)), 100)
    assert got == [b"x" * 16]
    assert ring.consumer_pos == bad  # the good record is committed, the bad one kept
    assert info.value.position == bad
    assert "<--" in info.value.dump and "88 13 00 00" in info.value.dump


def test_misaligned_consumer_position_is_reported() -> None:
    ring = HandRing()
    ring.output(b"z" * 8)
    struct.pack_into("<Q", ring.cons_page, 0, 4)
    ring.attach()  # a consumer that starts from the misaligned shared position
    with pytest.raises(CorruptRecordError, match="8-byte aligned"):
        drain_all(ring)


def test_producer_position_behind_consumer_is_reported() -> None:
    ring = HandRing()
    struct.pack_into("<Q", ring.cons_page, 0, 64)
    ring.attach()
    with pytest.raises(CorruptRecordError, match="not within one ring"):
        drain_all(ring)


def test_record_running_past_producer_is_corrupt() -> None:
    ring = HandRing()
    pos = ring.reserve(b"q" * 8)
    assert pos is not None
    ring.set_header(pos, 64)  # claims 64 bytes, only 16 were reserved
    with pytest.raises(CorruptRecordError, match="overruns"):
        drain_all(ring)


def test_negative_callback_return_stops_and_counts_that_record() -> None:
    ring = HandRing()
    for i in range(5):
        ring.output(bytes([i]) * 8)
    seen: list[int] = []

    def cb(v: memoryview) -> int:
        seen.append(v[0])
        return -7 if v[0] == 2 else 0

    assert ring.state.drain(cb, 100) == (3, -7)
    assert seen == [0, 1, 2]
    assert drain_all(ring) == [bytes([3]) * 8, bytes([4]) * 8]


def test_callback_view_is_released_after_the_call() -> None:
    ring = HandRing()
    ring.output(b"k" * 8)
    kept: list[memoryview] = []
    ring.state.drain(kept.append, 10)
    with pytest.raises(ValueError):
        bytes(kept[0])


def test_exception_in_callback_consumes_that_record_and_the_ones_before() -> None:
    ring = HandRing()
    for i in range(4):
        ring.output(bytes([i]) * 8)

    def cb(v: memoryview) -> None:
        if v[0] == 2:
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        ring.state.drain(cb, 10)
    # 0, 1 and the raising 2 are consumed (as libbpf and PerfBuffer do): never again
    assert drain_all(ring) == [bytes([3]) * 8]


def test_limit_is_respected() -> None:
    ring = HandRing()
    for i in range(10):
        ring.output(bytes([i]) * 8)
    assert len(drain_all(ring, 4)) == 4
    assert len(drain_all(ring)) == 6


def test_copy_out_and_views_agree() -> None:
    ring = HandRing()
    payloads = [bytes([i]) * (8 + i % 3 * 8) for i in range(20)]
    for p in payloads:
        ring.output(p)
    views, end = ring.state.views(100)
    assert [bytes(v) for v in views] == payloads
    assert ring.consumer_pos == 0  # views don't commit
    for v in views:
        v.release()
    copied = ring.state.copy_out(ring.state.data, 0, 100)
    assert copied == payloads and ring.consumer_pos == end


DT = np.dtype([("seq", "<u8"), ("val", "<u4"), ("pad", "<u4")])


def test_decode_batch_equal_sizes_vectorised() -> None:
    ring = HandRing(1 << 16)
    for i in range(500):
        ring.output(struct.pack("<QII", i, i * 3, 0))
    arr = ring.state.decode_batch(DT, 10_000)
    assert list(arr["seq"]) == list(range(500))
    assert list(arr["val"]) == [i * 3 for i in range(500)]
    assert ring.consumer_pos == ring.producer_pos


def test_decode_batch_mixed_sizes_discards_and_busy() -> None:
    ring = HandRing(1 << 16)
    expect = []
    for i in range(60):
        if i % 7 == 3:  # longer record: decoded from its first 16 bytes
            ring.output(struct.pack("<QII", i, i, 0) + b"tail-bytes")
            expect.append((i, i))
        elif i % 11 == 5:  # shorter record: zero-filled
            ring.output(struct.pack("<Q", i))
            expect.append((i, 0))
        elif i % 13 == 6:
            pos = ring.reserve(struct.pack("<QII", i, i, 0))
            assert pos is not None
            ring.commit(pos, discard=True)
        else:
            ring.output(struct.pack("<QII", i, i, 0))
            expect.append((i, i))
    busy = ring.reserve(struct.pack("<QII", 999, 999, 0))
    ring.output(struct.pack("<QII", 1000, 1000, 0))
    arr = ring.state.decode_batch(DT, 10_000)
    assert list(zip(arr["seq"].tolist(), arr["val"].tolist(), strict=True)) == expect
    assert ring.consumer_pos == busy


def test_decode_batch_limit_and_header_with_bits_is_not_taken_as_size() -> None:
    ring = HandRing(1 << 16)
    for i in range(10):
        ring.output(struct.pack("<QII", i, 0, 0))
    assert len(ring.state.decode_batch(DT, 4)) == 4
    assert len(ring.state.decode_batch(DT, 100)) == 6
    assert BUSY_BIT | DISCARD_BIT == 0xC0000000
