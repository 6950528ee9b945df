"""UserRingBuffer against a real BPF consumer (bpf/user_ringbuf_test.bpf.c)."""

from __future__ import annotations

import errno
import os
import struct
import threading
from collections.abc import Iterator

import pytest

from ringtool import UserRingBuffer
from ringtool.errors import (
    MapTypeError,
    MmapError,
    ProducerStateError,
    RecordSizeError,
    RingFullError,
)
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.protocol.ringbuf import BUSY_BIT, record_span
from tests.helpers.user_ringbuf import UrbDrainer, sample

pytestmark = pytest.mark.kernel


@pytest.fixture
def drainer() -> Iterator[UrbDrainer]:
    d = UrbDrainer(4096)
    yield d
    d.close()


@pytest.fixture
def urb(drainer: UrbDrainer) -> Iterator[UserRingBuffer]:
    u = UserRingBuffer(drainer.urb_fd)
    yield u
    u.close()


def put(urb: UserRingBuffer, data: bytes) -> None:
    with urb.reserve(len(data)) as r:
        r.buf[:] = data


def test_records_reach_the_bpf_program_whole_and_in_order(
    drainer: UrbDrainer, urb: UserRingBuffer
) -> None:
    sent = [sample(i, 8 + i * 13) for i in range(10)]
    for s in sent:
        put(urb, s)
    assert drainer.drain() == (10, sent)
    assert drainer.drain() == (0, [])


def test_a_full_ring_refuses_then_takes_again_after_the_drain(
    drainer: UrbDrainer, urb: UserRingBuffer
) -> None:
    sent = []
    with pytest.raises(RingFullError):
        while True:
            s = sample(len(sent), 120)
            put(urb, s)
            sent.append(s)
    assert len(sent) == 4096 // record_span(120)
    assert urb.free_space() < record_span(120)
    assert drainer.drain() == (len(sent), sent)
    put(urb, sample(99, 120))
    assert drainer.drain() == (1, [sample(99, 120)])


def test_wrap_around_many_times_nothing_lost_or_torn(
    drainer: UrbDrainer, urb: UserRingBuffer
) -> None:
    sent: list[bytes] = []
    got: list[bytes] = []
    for i in range(400):  # about 20 laps of the ring, at every 8-byte offset
        s = sample(i, 8 + (i * 37) % 249)
        try:
            put(urb, s)
        except RingFullError:
            n, out = drainer.drain()
            assert n == len(out)
            got += out
            put(urb, s)
        sent.append(s)
    got += drainer.drain()[1]
    assert got == sent


def test_discarded_records_are_skipped_by_the_kernel(
    drainer: UrbDrainer, urb: UserRingBuffer
) -> None:
    kept = []
    for i in range(12):
        s = sample(i, 40)
        r = urb.reserve(len(s))
        r.buf[:] = s
        if i % 3 == 0:
            urb.discard(r)
        else:
            urb.submit(r)
            kept.append(s)
    n, out = drainer.drain()
    assert out == kept and n == len(kept)


def test_the_context_manager_discards_on_an_exception(
    drainer: UrbDrainer, urb: UserRingBuffer
) -> None:
    with pytest.raises(KeyError), urb.reserve(16) as r:
        r.buf[:] = sample(1, 16)
        raise KeyError("boom")
    put(urb, sample(2, 16))
    assert drainer.drain() == (1, [sample(2, 16)])


def test_batch_write_submits_what_fits_in_order(drainer: UrbDrainer, urb: UserRingBuffer) -> None:
    recs = [sample(i, 200) for i in range(40)]
    first = urb.write_batch(recs)
    assert first == 4096 // record_span(200)
    assert drainer.drain() == (first, recs[:first])
    assert urb.write_batch(recs[first : 2 * first]) == first
    assert drainer.drain() == (first, recs[first : 2 * first])


def test_the_kernel_rejects_a_malformed_record_and_stays_on_it(
    drainer: UrbDrainer, urb: UserRingBuffer
) -> None:
    put(urb, sample(0, 16))
    assert drainer.drain() == (1, [sample(0, 16)])
    start = drainer.consumer_pos()
    put(urb, sample(1, 16))
    # the header claims 1000 bytes where producer_pos published only 24
    drainer.poke(start % 4096, struct.pack("<I", 1000))
    assert drainer.drain() == (-errno.EINVAL, [])
    assert drainer.consumer_pos() == start  # not moved: every later drain fails too
    assert drainer.drain() == (-errno.EINVAL, [])


def test_a_busy_record_holds_back_later_ones(drainer: UrbDrainer, urb: UserRingBuffer) -> None:
    first = urb.reserve(16)
    put(urb, sample(2, 16))
    assert drainer.drain() == (0, [])
    first.buf[:] = sample(1, 16)
    first.submit()
    assert drainer.drain() == (2, [sample(1, 16), sample(2, 16)])


def test_reserve_blocking_wakes_when_the_bpf_side_drains(
    drainer: UrbDrainer, urb: UserRingBuffer
) -> None:
    while urb.write_batch([sample(0, 100)]):
        pass
    got: list[object] = []
    started = threading.Event()

    def producer() -> None:
        started.set()
        try:
            with urb.reserve_blocking(100, timeout_ms=30_000) as r:
                r.buf[:] = sample(7, 100)
            got.append("reserved")
        except Exception as exc:  # reported by the assertion below
            got.append(exc)

    t = threading.Thread(target=producer)
    t.start()
    started.wait()
    t.join(0.2)  # it is blocked: the ring is full
    assert t.is_alive() and not got
    n, _ = drainer.drain()
    assert n > 0
    t.join(30)
    assert got == ["reserved"]
    assert drainer.drain()[1] == [sample(7, 100)]


def test_reserve_blocking_times_out_on_a_full_ring(urb: UserRingBuffer) -> None:
    while urb.write_batch([sample(0, 100)]):
        pass
    with pytest.raises(RingFullError):
        urb.reserve_blocking(100, timeout_ms=50)


def test_misuse_gets_specific_errors(drainer: UrbDrainer, urb: UserRingBuffer) -> None:
    with pytest.raises(MapTypeError):
        UserRingBuffer(drainer.result_fd)
    with pytest.raises(RecordSizeError):
        urb.reserve(4096)
    r = urb.reserve(8)
    r.submit()
    with pytest.raises(ProducerStateError):
        r.submit()
    pending = urb.reserve(8)
    urb.close()
    assert pending.done  # discarded at close
    with pytest.raises(ProducerStateError):
        urb.reserve(8)
    urb.close()  # idempotent
    assert BUSY_BIT  # the header bit the kernel stops at (see the busy test)


def test_producers_on_many_threads_lose_nothing(drainer: UrbDrainer, urb: UserRingBuffer) -> None:
    per_thread = 200
    done = threading.Event()

    def produce(tid: int) -> None:
        for i in range(per_thread):
            with urb.reserve_blocking(24, timeout_ms=30_000) as r:
                r.buf[:] = sample(tid * 1000 + i, 24)

    threads = [threading.Thread(target=produce, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    got: list[bytes] = []
    while not done.is_set():
        got += drainer.drain()[1]
        if not any(t.is_alive() for t in threads):
            done.set()
    for t in threads:
        t.join()
    got += drainer.drain()[1]
    assert sorted(got) == sorted(
        sample(t * 1000 + i, 24) for t in range(4) for i in range(per_thread)
    )
    for t in range(4):  # each thread's records in its order
        mine = [g for g in got if struct.unpack_from("<I", g, 4)[0] // 1000 == t]
        assert mine == [sample(t * 1000 + i, 24) for i in range(per_thread)]


def test_the_consumer_page_is_the_kernels_alone(drainer: UrbDrainer) -> None:
    """ringbuf_map_mmap_user refuses a writable mapping of the consumer page."""
    with pytest.raises(MmapError) as info:
        map_shared(drainer.urb_fd, PAGE_SIZE, offset=0, writable=True, what="consumer page")
    assert info.value.errno == errno.EPERM


def test_a_misaligned_producer_pos_is_einval(drainer: UrbDrainer, urb: UserRingBuffer) -> None:
    put(urb, sample(0, 16))
    m = map_shared(drainer.urb_fd, PAGE_SIZE, offset=PAGE_SIZE, writable=True, what="producer")
    try:
        m[:8] = (24 + 4).to_bytes(8, "little")  # producer_pos not a multiple of 8
    finally:
        m.close()
    assert drainer.drain() == (-errno.EINVAL, [])


def test_an_abandoned_busy_record_is_discarded_and_the_bpf_side_moves_on(
    drainer: UrbDrainer, urb: UserRingBuffer
) -> None:
    """The reservation of a producer that died (here: one never submitted, of another
    UserRingBuffer over the map, closed without its close discarding it: its views
    released by hand) stops the kernel's drain until the next producer discards it."""
    dead = UserRingBuffer(drainer.urb_fd)
    r = dead.reserve(16)
    dead._pending.clear()  # as if killed: nothing will submit or discard it
    r.buf.release()
    dead.close()
    later = UserRingBuffer(drainer.urb_fd)
    try:
        end = later.write(sample(1, 16))
        assert drainer.drain() == (0, [])  # stuck at the BUSY header
        mine = later.reserve(8)
        with pytest.raises(ProducerStateError, match="reservation open"):
            later.discard_abandoned()  # ours is not abandoned
        mine.discard()
        last = later.write(sample(2, 16))
        (gone,) = later.discard_abandoned()
        assert (gone.pos, gone.length) == (r.pos, 16)
        assert gone.owner == os.getpid()
        assert drainer.drain() == (2, [sample(1, 16), sample(2, 16)])
        assert later.consumer_pos() == last > end
    finally:
        later.close()
