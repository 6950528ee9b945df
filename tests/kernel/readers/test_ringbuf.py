"""RingBuffer against real RINGBUF maps filled by real BPF programs."""

from __future__ import annotations

import struct
import threading
import time

import pytest

import ringtool
from ringtool.errors import (
    BpfSyscallError,
    ConsumerStateError,
    MapTypeError,
    MmapError,
    RingSizeError,
)
from ringtool.kernel import bpf
from ringtool.kernel.mapping import map_shared
from tests.helpers.producers import MAGIC, TEST_EVENT, RingProducer, seqs

pytestmark = pytest.mark.kernel

BPF_RB_NO_WAKEUP = 1
BPF_RB_FORCE_WAKEUP = 2


def test_reserve_submit_records_arrive_in_order_via_callback(ring_producer: RingProducer) -> None:
    got: list[bytes] = []
    with ringtool.RingBuffer(ring_producer.events, lambda d: got.append(bytes(d))) as rb:
        ring_producer.emit(1000)
        assert rb.ring(0).avail_data_size == 1000 * 32
        assert rb.poll(1000) == 1000
        assert rb.ring(0).consumer_pos == rb.ring(0).producer_pos == 32000
    assert seqs(got) == list(range(1, 1001))
    assert all(struct.unpack_from("<Q4xI", g, 8)[1] == MAGIC for g in got)


def test_iterator_lease_and_batch_styles_see_the_same_stream(ring_producer: RingProducer) -> None:
    rb = ringtool.RingBuffer(ring_producer.events)
    ring_producer.emit(300)
    it = [r.data for r in rb.read(timeout_ms=0)]
    assert seqs(it) == list(range(1, 301)) and all(len(d) == 24 for d in it)
    ring_producer.emit(300)
    with rb.lease() as batch:
        assert seqs([bytes(v) for v in batch]) == list(range(301, 601))
        assert rb.ring(0).consumer_pos < rb.ring(0).producer_pos  # not committed yet
    assert rb.ring(0).avail_data_size == 0
    ring_producer.emit(300)
    arr = rb.read_batch(TEST_EVENT)
    assert arr["seq"].tolist() == list(range(601, 901))
    assert set(arr["magic"].tolist()) == {MAGIC}
    rb.close()


def test_discarded_records_are_skipped(ring_producer: RingProducer) -> None:
    got: list[bytes] = []
    with ringtool.RingBuffer(ring_producer.events, lambda d: got.append(bytes(d))) as rb:
        ring_producer.emit(100, "emit_discard")
        assert rb.consume() == 50
        assert rb.ring(0).avail_data_size == 0  # discarded space was released too
    assert seqs(got) == list(range(2, 101, 2))


def test_variable_length_records(ring_producer: RingProducer) -> None:
    rb = ringtool.RingBuffer(ring_producer.events)
    ring_producer.emit(40, "emit_varlen")
    recs = [r.data for r in rb.read(timeout_ms=0)]
    assert [len(r) for r in recs] == [(s & 3) * 8 + 8 if s & 3 else 8 for s in range(1, 41)]
    assert seqs(recs) == list(range(1, 41))
    rb.close()


@pytest.mark.parametrize(
    ("flags", "wakes"),
    [(0, True), (BPF_RB_NO_WAKEUP, False), (BPF_RB_FORCE_WAKEUP, True)],
    ids=["flags0-caught-up", "no-wakeup", "force-wakeup"],
)
def test_output_wakeup_flags(flags: int, wakes: bool) -> None:
    p = RingProducer(pages=16, output_flags=flags)
    try:
        got: list[bytes] = []
        rb = ringtool.RingBuffer(p.events, lambda d: got.append(bytes(d)))
        p.emit(1, "emit_output")
        n = rb.poll(300 if not wakes else 2000)
        if wakes:
            assert n == 1
        else:
            assert n == 0 and rb.ring(0).avail_data_size == 32  # data there, no wakeup
            assert rb.consume() == 1
        assert seqs(got) == [1]
        rb.close()
    finally:
        p.close()


def test_two_rings_in_one_manager() -> None:
    a, b = RingProducer(pages=16), RingProducer(pages=16)
    try:
        got: dict[str, list[int]] = {"a": [], "b": []}
        rb = ringtool.RingBuffer(a.events, lambda d: got["a"].append(seqs([bytes(d)])[0]))
        assert rb.add(b.events, lambda d: got["b"].append(seqs([bytes(d)])[0])) == 1
        a.emit(10)
        b.emit(20)
        total = 0
        deadline = time.monotonic() + 5
        while total < 30 and time.monotonic() < deadline:
            total += rb.poll(500)
        assert total == 30
        assert got == {"a": list(range(1, 11)), "b": list(range(1, 21))}
        b.emit(5)
        assert {r.ring for r in rb.read(timeout_ms=0)} == {1}
        rb.close()
    finally:
        a.close()
        b.close()


def test_callback_stop_returns_its_value_and_keeps_the_rest(ring_producer: RingProducer) -> None:
    got: list[int] = []

    def cb(d: memoryview) -> int:
        got.append(seqs([bytes(d)])[0])
        return -42 if len(got) == 5 else 0

    rb = ringtool.RingBuffer(ring_producer.events, cb)
    ring_producer.emit(10)
    assert rb.consume() == -42
    assert got == [1, 2, 3, 4, 5]
    assert rb.consume() == 5 and got == list(range(1, 11))
    rb.close()


def test_consume_n_takes_at_most_n(ring_producer: RingProducer) -> None:
    got: list[bytes] = []
    rb = ringtool.RingBuffer(ring_producer.events, lambda d: got.append(bytes(d)))
    ring_producer.emit(10)
    assert rb.consume_n(3) == 3
    assert rb.consume_n(100) == 7
    assert seqs(got) == list(range(1, 11))
    rb.close()


def test_close_and_wakeup_unblock_a_waiting_poll(ring_producer: RingProducer) -> None:
    rb = ringtool.RingBuffer(ring_producer.events, lambda d: None)
    results: list[int] = []

    def waiting_poll() -> threading.Thread:
        """A thread in rb.poll(-1): started, about to call it, and 0.2 s more (an
        emulated guest's stall could otherwise let close() come first)."""
        calling = threading.Event()

        def run() -> None:
            calling.set()
            results.append(rb.poll(-1))

        t = threading.Thread(target=run)
        t.start()
        assert calling.wait(60)
        time.sleep(0.2)
        return t

    t = waiting_poll()
    rb.wakeup()
    t.join(5)
    assert not t.is_alive() and results == [0]
    t = waiting_poll()
    rb.close()
    t.join(5)
    assert not t.is_alive() and results == [0, 0]
    rb.close()  # idempotent
    with pytest.raises(ConsumerStateError):
        rb.consume()


def test_auto_callback_delivers_in_background_and_refuses_poll(ring_producer: RingProducer) -> None:
    got: list[bytes] = []
    done = threading.Event()

    def cb(d: memoryview) -> None:
        got.append(bytes(d))
        if len(got) == 200:
            done.set()

    rb = ringtool.RingBuffer(ring_producer.events, cb, auto_callback=True)
    with pytest.raises(ConsumerStateError, match="auto_callback"):
        rb.poll(0)
    ring_producer.emit(200)
    assert done.wait(5)
    rb.close()
    assert seqs(got) == list(range(1, 201))
    assert rb.auto_error is None


def test_failed_reservations_are_counted_per_cpu() -> None:
    p = RingProducer(pages=1)  # 4096 bytes of 32-byte records
    try:
        rb = ringtool.RingBuffer(p.events)
        p.emit(1000, cpu=0)
        kept = [r.data for r in rb.read(timeout_ms=0)]
        dropped = rb.dropped()
        assert len(kept) == (4096 - 1) // 32  # the kernel keeps prod - cons <= size - 1
        assert dropped[0] == 1000 - len(kept) and sum(dropped) == dropped[0]
        assert len(kept) + sum(dropped) == p.produced()
        rb.close()
    finally:
        p.close()


def test_sustained_producer_thread_nothing_unaccounted() -> None:
    p = RingProducer(pages=4)
    try:
        count = 0

        def cb(d: memoryview) -> None:
            nonlocal count
            count += 1

        rb = ringtool.RingBuffer(p.events, cb)
        stop = threading.Event()

        def produce() -> None:
            while not stop.is_set():
                p.emit(500)

        t = threading.Thread(target=produce)
        t.start()
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            rb.poll(50)
        stop.set()
        t.join()
        rb.consume()
        assert count > 0
        assert count + sum(rb.dropped()) == p.produced()
        rb.close()
    finally:
        p.close()


def test_wrong_map_type_and_bad_fd_are_clear_errors(ring_producer: RingProducer) -> None:
    with pytest.raises(MapTypeError, match="PERCPU_ARRAY map, not RINGBUF"):
        ringtool.RingBuffer(ring_producer.obj[b"events_drops"])
    fd = bpf.map_create(bpf.MapType.HASH, key_size=4, value_size=4, max_entries=4)
    try:
        with pytest.raises(MapTypeError, match="HASH"):
            ringtool.RingBuffer(fd)
    finally:
        bpf.close_fd(fd)
    with pytest.raises(BpfSyscallError):
        ringtool.RingBuffer(0)  # stdin is not a BPF map
    with pytest.raises(MapTypeError):
        ringtool.RingBuffer("events")


def test_raw_map_fd_ring_created_by_ringtool() -> None:
    fd = bpf.map_create(bpf.MapType.RINGBUF, key_size=0, value_size=0, max_entries=1 << 16)
    try:
        rb = ringtool.RingBuffer(fd)
        assert rb.ring(0).size == 1 << 16 and rb.ring(0).avail_data_size == 0
        assert rb.dropped() == [0] * len(rb.dropped())  # no counter: reported as zero
        rb.close()
    finally:
        bpf.close_fd(fd)


def test_ring_size_not_a_power_of_two_of_pages_is_refused(
    ring_producer: RingProducer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = bpf.map_info(ring_producer.events.map_fd)
    fake = bpf.MapInfo(
        type=real.type,
        id=real.id,
        key_size=0,
        value_size=0,
        max_entries=3 * 4096,
        flags=0,
        name=real.name,
    )
    monkeypatch.setattr("ringtool.readers.ringbuf.bpf.map_info", lambda fd: fake)
    with pytest.raises(RingSizeError, match="power of two"):
        ringtool.RingBuffer(ring_producer.events)


def test_mmap_refused_by_the_kernel_is_an_mmap_error(ring_producer: RingProducer) -> None:
    # The kernel maps the producer page + data read-only: asking for write is refused.
    with pytest.raises(MmapError, match="refused"):
        map_shared(
            ring_producer.events.map_fd, 4096, offset=4096, writable=True, what="ring_producer page"
        )
