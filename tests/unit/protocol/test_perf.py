"""Perf ring protocol on hand-built rings: a fake kernel writes records into bytearrays."""

from __future__ import annotations

import errno
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import CorruptRecordError
from ringtool.kernel.perf_event import (
    ATTR_DISABLED,
    ATTR_WATERMARK,
    ATTR_WRITE_BACKWARD,
    PERF_COUNT_SW_BPF_OUTPUT,
    PERF_SAMPLE_RAW,
    bpf_output_attr,
)
from ringtool.protocol.perf import DATA_HEAD_OFF, PerfRing
from ringtool.protocol.perf_backward import read_backward
from tests.helpers.builders.perf import FakeKernel


def padded(p: bytes) -> bytes:
    return FakeKernel.sample_rec(p)[12:]


def test_single_sample_all_styles() -> None:
    k = FakeKernel()
    k.put(k.sample_rec(b"hello"))
    got: list[tuple[int, bytes]] = []
    assert k.ring.drain(lambda c, v: got.append((c, bytes(v))), 10) == (1, 0)
    assert got == [(3, b"hello" + b"\0" * 7)]  # 4 + 5 -> 16: raw of 12
    assert k.tail == k.head
    k.put(k.sample_rec(b"abc"))
    assert k.ring.copy_out(10) == [b"abc\0"]  # 4 + 3 -> 8: raw of 4
    k.put(k.sample_rec(b"xyz"))
    views, commit = k.ring.lease(10)
    assert [bytes(v) for v in views] == [b"xyz\0"] and k.tail != k.head
    commit()
    assert k.tail == k.head


@pytest.mark.parametrize("start", range(0, 256, 4))
@pytest.mark.parametrize("plen", [1, 4, 12, 20, 60])
def test_wrap_at_every_offset(start: int, plen: int) -> None:
    """Records straddle the end at every offset, including split headers (start%8=4)."""
    k = FakeKernel(256, start=start + 256 * 7)
    payloads = [bytes([i + 1]) * plen for i in range(8)]
    out: list[bytes] = []
    for p in payloads:
        rec = k.sample_rec(p)
        if len(rec) > k.free():
            out += k.ring.copy_out(1000)
        k.put(rec)
    out += [bytes(v) for v in k.ring.lease(1000)[0]]
    assert out == [padded(p) for p in payloads]


@pytest.mark.parametrize("style", ["drain", "copy", "lease", "batch"])
def test_wrapped_record_every_style(style: str) -> None:
    k = FakeKernel(64, start=48)
    k.put(k.sample_rec(struct.pack("<QI", 7, 1)))  # 32-byte record at 48..80: wraps
    dt = np.dtype([("seq", "<u8"), ("cpu", "<u4")])
    if style == "drain":
        got: list[bytes] = []
        k.ring.drain(lambda c, v: got.append(bytes(v)), 9)
    elif style == "copy":
        got = k.ring.copy_out(9)
    elif style == "lease":
        vs, commit = k.ring.lease(9)
        got = [bytes(v) for v in vs]
        commit()
    else:
        arr = k.ring.read_batch(dt, 9)
        got = [arr.tobytes() + b"\0" * 8]
    assert got[0][:12] == struct.pack("<QI", 7, 1)
    assert k.tail == k.head


def test_lost_uses_lost_field_not_id() -> None:
    k = FakeKernel()
    k.put(k.sample_rec(b"a"))
    k.put(k.lost_rec(lost=41, id_=999))
    k.put(k.sample_rec(b"b"))
    assert len(k.ring.copy_out(10)) == 2
    assert k.lost == [(3, 41)] and k.ring.lost_total == 41


def test_unknown_types_counted_and_skipped() -> None:
    k = FakeKernel()
    k.put(k.other_rec(3, 16))
    k.put(k.sample_rec(b"a"))
    k.put(k.other_rec(77, 40))
    got = k.ring.copy_out(10)
    assert got == [padded(b"a")] and k.ring.unknown == 2 and k.tail == k.head


@pytest.mark.parametrize("bad_size", [0, 4, 12, 20, 512, 4096])
def test_corrupt_size_raises_with_dump_and_keeps_position(bad_size: int) -> None:
    k = FakeKernel(256)
    k.put(k.sample_rec(b"good"))
    good_end = k.head
    k.put(struct.pack("<IHHI", 9, 0, bad_size, 4) + b"\0" * 4)
    k.head = good_end + (256 - 24)  # claim much more data than was written
    k.publish()
    # the good record before it is delivered (and committed) first, not lost
    assert k.ring.copy_out(10) == [padded(b"good")] and k.tail == good_end
    with pytest.raises(CorruptRecordError) as ei:
        k.ring.copy_out(10)
    assert ei.value.position == good_end and "<--" in ei.value.dump
    assert k.tail == good_end  # the bad one is not consumed
    with pytest.raises(CorruptRecordError):  # and it fails the same way again: no hang
        k.ring.drain(lambda c, v: None, 10)


def test_raw_size_overrunning_record_is_corrupt() -> None:
    k = FakeKernel()
    k.put(struct.pack("<IHHI", 9, 0, 16, 200) + b"\0" * 4)
    with pytest.raises(CorruptRecordError):
        k.ring.lease(10)


def test_head_too_far_ahead_is_corrupt() -> None:
    k = FakeKernel(64)
    struct.pack_into("<Q", k.page, DATA_HEAD_OFF, 1000)
    with pytest.raises(CorruptRecordError):
        k.ring.copy_out(10)


def test_negative_return_stops_and_commits_through_that_record() -> None:
    k = FakeKernel(1024)
    for i in range(40):
        k.put(k.sample_rec(struct.pack("<Q", i)))
    seen: list[int] = []

    def cb(cpu: int, v: memoryview) -> int:
        seen.append(int.from_bytes(v[:8], "little"))
        return -7 if len(seen) == 25 else 0

    assert k.ring.drain(cb, 1000) == (25, -7)
    assert k.tail == 25 * 24
    assert k.ring.drain(lambda c, v: None, 1000) == (15, 0)


def test_callback_raising_consumes_that_record() -> None:
    k = FakeKernel(1024)
    for i in range(3):
        k.put(k.sample_rec(struct.pack("<Q", i)))
    with pytest.raises(RuntimeError):
        k.ring.drain(lambda c, v: (_ for _ in ()).throw(RuntimeError("x")), 10)
    assert k.tail == 24
    assert k.ring.copy_out(10) == [
        struct.pack("<Q", 1) + b"\0" * 4,
        struct.pack("<Q", 2) + b"\0" * 4,
    ]


def test_views_are_released_after_callback() -> None:
    k = FakeKernel()
    k.put(k.sample_rec(b"a"))
    kept: list[memoryview] = []
    k.ring.drain(lambda c, v: kept.append(v), 1)
    with pytest.raises(ValueError):
        bytes(kept[0])


def test_long_runs_vectorised_with_breaks() -> None:
    k = FakeKernel(1 << 16)
    dt = np.dtype([("seq", "<u8"), ("cpu", "<u4"), ("magic", "<u4")])
    for i in range(1000):
        misc = 1 if i == 500 else 0  # a different header breaks the run
        k.put(k.sample_rec(struct.pack("<QII", i, 3, 0x46524550), misc=misc))
        if i == 700:
            k.put(k.lost_rec(5))
        if i == 800:
            k.put(k.sample_rec(b"short"))  # shorter than dtype: zero-filled
    arr = k.ring.read_batch(dt, 10_000)
    assert len(arr) == 1001 and k.ring.lost_total == 5
    seqs = list(arr["seq"])
    assert seqs[:801] == list(range(801)) and seqs[802:] == list(range(801, 1000))
    assert arr[801]["cpu"] == 0 and arr[801]["magic"] == 0
    assert k.tail == k.head


def test_limit_respected_in_runs() -> None:
    k = FakeKernel(1 << 14)
    for i in range(100):
        k.put(k.sample_rec(struct.pack("<Q", i)))
    assert len(k.ring.copy_out(37)) == 37
    assert k.ring.drain(lambda c, v: None, 13) == (13, 0)
    assert len(k.ring.read_batch(np.dtype("<u8"), 1000)) == 50


def test_read_backward_newest_records() -> None:
    """write_backward: the kernel writes downwards from 0; data_head is the newest."""
    size = 128
    page, data = bytearray(4096), bytearray(size)
    head = 0
    for i in range(10):  # 10 records of 24 bytes into 128: the oldest are overwritten
        rec = FakeKernel.sample_rec(struct.pack("<Q", i))
        head -= len(rec)
        for j, b in enumerate(rec):
            data[(head + j) % size] = b
    struct.pack_into("<Q", page, DATA_HEAD_OFF, head % 2**64)
    ring = PerfRing(page, data)
    got = [int.from_bytes(p[:8], "little") for p in read_backward(ring)]
    assert got == [5, 6, 7, 8, 9]  # 5 whole records fit; the 6th was partly overwritten


def test_read_backward_partially_filled() -> None:
    size = 256
    page, data = bytearray(4096), bytearray(size)
    head = 0
    for i in range(3):
        rec = FakeKernel.sample_rec(struct.pack("<Q", i))
        head -= len(rec)
        data[head % size : head % size + len(rec)] = rec
    struct.pack_into("<Q", page, DATA_HEAD_OFF, head % 2**64)
    got = [int.from_bytes(p[:8], "little") for p in read_backward(PerfRing(page, data))]
    assert got == [0, 1, 2]


def test_attr_watermark_and_backward() -> None:
    a = bpf_output_attr(wakeup_events=4)
    assert a.config == PERF_COUNT_SW_BPF_OUTPUT and a.sample_type == PERF_SAMPLE_RAW
    assert a.sample_period == 1 and a.wakeup == 4 and a.flags == ATTR_DISABLED
    w = bpf_output_attr(watermark_bytes=2048, backward=True)
    assert w.flags & ATTR_WATERMARK and w.wakeup == 2048 and w.flags & ATTR_WRITE_BACKWARD


# --- property: nothing lost, duplicated or reordered; every lost counted -------------

record_st = st.one_of(
    st.tuples(st.just("s"), st.binary(min_size=0, max_size=40)),
    st.tuples(st.just("l"), st.integers(0, 2**40)),
    st.tuples(st.just("u"), st.sampled_from([16, 24, 48])),
)


@settings(max_examples=300, deadline=None)
@given(
    records=st.lists(record_st, max_size=60),
    start=st.one_of(st.integers(0, 2**20).map(lambda x: x * 8), st.integers(0, 2**23)),
    size=st.sampled_from([64, 128, 256]),
    chunks=st.lists(st.integers(1, 7), min_size=1, max_size=8),
    styles=st.lists(st.sampled_from(["drain", "copy", "lease"]), min_size=1, max_size=8),
)
def test_property_stream(
    records: list[tuple[str, Any]], start: int, size: int, chunks: list[int], styles: list[str]
) -> None:
    k = FakeKernel(size, start=start)
    expect: list[bytes] = []
    lost = 0
    got: list[bytes] = []
    step = 0

    def consume() -> None:
        nonlocal step
        limit, style = chunks[step % len(chunks)], styles[step % len(styles)]
        step += 1
        if style == "drain":
            k.ring.drain(lambda c, v: got.append(bytes(v)), limit)
        elif style == "copy":
            got.extend(k.ring.copy_out(limit))
        else:
            views, commit = k.ring.lease(limit)
            got.extend(bytes(v) for v in views)
            commit()

    for kind, val in records:
        if kind == "s":
            rec = k.sample_rec(val)
            expect.append(padded(val))
        elif kind == "l":
            rec = k.lost_rec(val)
            lost += val
        else:
            rec = k.other_rec(5, val)
        if len(rec) > size:
            expect.pop()
            continue
        while len(rec) > k.free():
            consume()
        k.put(rec)
    while k.tail != k.head:
        consume()
    assert got == expect
    assert k.ring.lost_total == lost == sum(n for _, n in k.lost)


@pytest.mark.parametrize(
    ("err", "needle"),
    [
        (errno.EACCES, "perf_event_paranoid"),
        (errno.EPERM, "CAP_PERFMON"),
        (errno.EMFILE, "ulimit -n"),
        (errno.ENODEV, "offline"),
        (errno.ENOENT, "BPF_OUTPUT"),
    ],
)
def test_perf_event_open_errors_name_the_cause(
    monkeypatch: pytest.MonkeyPatch, err: int, needle: str
) -> None:
    from ringtool.errors import PerfEventOpenError
    from ringtool.kernel import perf_event

    monkeypatch.setattr(perf_event, "raw_syscall", lambda *a: (-1, err))
    with pytest.raises(PerfEventOpenError, match=needle) as ei:
        perf_event.perf_event_open(bpf_output_attr(), cpu=5)
    assert ei.value.errno == err
