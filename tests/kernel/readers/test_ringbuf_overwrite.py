"""RingBuffer on a real RINGBUF created with BPF_F_RB_OVERWRITE, filled by a real BPF
program that laps a slow reader: everything produced is delivered intact or counted
(run on a kernel that has the flag, Linux 6.19+); a clear KernelFeatureError where the
kernel refuses it."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ringtool
from ringtool.errors import KernelFeatureError
from ringtool.kernel import bpf
from ringtool.kernel.ringbuf_map import create_ringbuf, has_ringbuf_overwrite
from tests.helpers.overwrite import SPAN, OverwriteProducer, need_overwrite, seq_checked

pytestmark = pytest.mark.kernel

DT = np.dtype([("seq", "<u8"), ("fill", "u1", 56)])


def test_a_kernel_without_the_flag_says_so() -> None:
    if has_ringbuf_overwrite():
        pytest.skip("this kernel has BPF_F_RB_OVERWRITE")
    with pytest.raises(KernelFeatureError, match=r"BPF_F_RB_OVERWRITE.*6\.19"):
        create_ringbuf(4096, overwrite=True)


def test_a_plain_ring_is_not_in_overwrite_mode() -> None:
    plain = create_ringbuf(4096)
    try:
        with ringtool.RingBuffer(plain) as rb:
            assert rb.ring(0).overwrite is False and rb.overwritten() == 0
    finally:
        bpf.close_fd(plain)


def test_the_mode_is_read_from_the_map_flags() -> None:
    need_overwrite()
    fd = create_ringbuf(4096, overwrite=True)
    try:
        assert bpf.map_info(fd).flags & (1 << 19)
        with ringtool.RingBuffer(fd) as rb:
            assert rb.ring(0).overwrite is True
            assert rb.overwritten() == 0
    finally:
        bpf.close_fd(fd)


@pytest.fixture
def producer() -> Iterator[OverwriteProducer]:
    need_overwrite()
    p = OverwriteProducer(pages=1)  # 56 records of 72 bytes in 4096
    yield p
    p.close()


def accounted(rb: ringtool.RingBuffer, delivered: int) -> int:
    assert rb.overwritten_uncounted_bytes() % SPAN == 0
    return delivered + rb.overwritten() + rb.overwritten_uncounted_bytes() // SPAN


def test_callback_reader_lapped_between_reads(producer: OverwriteProducer) -> None:
    got: list[int] = []
    with ringtool.RingBuffer(producer.events, lambda v: got.append(seq_checked(v))) as rb:
        producer.emit(10)
        assert rb.consume() == 10
        for burst in (30, 57, 200, 1, 56, 1000):  # under, over and many times a ring
            producer.emit(burst)
            rb.consume()
        assert got == sorted(set(got)) and got[:10] == list(range(10))
        assert producer.failed() == 0  # overwrite mode: the producer never fails
        assert accounted(rb, len(got)) == producer.produced() == 10 + 1344


def test_lease_lapped_while_held(producer: OverwriteProducer) -> None:
    got: list[int] = []
    with ringtool.RingBuffer(producer.events) as rb:
        for lap in (5, 40, 56, 57, 120):
            producer.emit(20)
            with rb.lease() as lease:
                producer.emit(lap)  # the kernel overwrites leased records
                lapped = set(lease.overwritten())
                got += [seq_checked(v) for i, v in enumerate(lease.views) if i not in lapped]
        with rb.lease() as lease:
            got += [seq_checked(v) for v in lease.views]
        assert got == sorted(set(got))
        assert rb.overwritten() > 0  # records it held and saw overwritten: counted exactly
        assert accounted(rb, len(got)) == producer.produced()


def test_read_and_batches_lapped_at_every_offset(producer: OverwriteProducer) -> None:
    """The producer laps the reader by every record offset of the ring in turn."""
    got: list[int] = []
    with ringtool.RingBuffer(producer.events) as rb:
        for k in range(1, 58):
            producer.emit(k)
            style = k % 3
            if style == 0:
                lapped_once = False
                for r in rb.read(timeout_ms=0):
                    got.append(seq_checked(r.data))
                    if not lapped_once:
                        producer.emit(k)  # laps the batch being yielded (its copies
                        lapped_once = True  # were checked: they stay valid)
            elif style == 1:
                with rb.lease_batch(DT) as lease:
                    producer.emit(k)
                    lapped = set(lease.overwritten())
                    rows = lease.array() if len(lease) else np.empty(0, DT)
                    for i, row in enumerate(rows):
                        if i not in lapped:
                            got.append(seq_checked(row.tobytes()))
            else:
                got += [seq_checked(row.tobytes()) for row in rb.read_batch(DT)]
        got += [seq_checked(row.tobytes()) for row in rb.read_batch(DT)]
        assert got == sorted(set(got))
        assert accounted(rb, len(got)) == producer.produced()
