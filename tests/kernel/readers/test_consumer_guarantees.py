"""Delivery guarantees of RingBuffer / PerfBuffer / RingBufGroup on real BPF rings.

Each record carries a sequence number from its BPF program, so "nothing lost, nothing
duplicated, order kept" is checked exactly: leaving a read() loop early (break, an
exception, close(), garbage collection), a callback that raises, another consume()
while a read() generator is suspended, and a merge abandoned half-way.
"""

from __future__ import annotations

import gc
import random
import struct
from collections.abc import Iterator

import pytest

import ringtool
from ringtool.errors import ConsumerStateError
from ringtool.merge import u64_at
from ringtool.readers.record import Record
from ringtool.readers.ringbuf_group import merge_rings
from tests.helpers.producers import GroupProducer, PerfProducer, RingProducer, decode, seqs

pytestmark = pytest.mark.kernel


def _first(it: Iterator[Record], n: int) -> list[bytes]:
    out = []
    for rec in it:
        out.append(rec.data)
        if len(out) == n:
            break
    return out


def _all(rb: ringtool.RingBuffer) -> list[bytes]:
    return [r.data for r in rb.read(timeout_ms=0)]


# --- item 1: leaving read() early -------------------------------------------------------


def test_ringbuf_break_keeps_the_rest(ring_producer: RingProducer) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(10)
        assert seqs(_first(rb.read(timeout_ms=0), 3)) == [1, 2, 3]
        assert seqs(_all(rb)) == list(range(4, 11))
        assert sum(rb.dropped()) == 0


def test_ringbuf_exception_in_loop_body_keeps_the_rest(ring_producer: RingProducer) -> None:
    got: list[bytes] = []
    with ringtool.RingBuffer(ring_producer.events, lambda d: got.append(bytes(d))) as rb:
        ring_producer.emit(10)
        with pytest.raises(KeyError):
            for rec in rb.read(timeout_ms=0):
                got.append(rec.data)
                if len(got) == 4:
                    raise KeyError("caller's bug")
        assert rb.consume() == 6
        assert seqs(got) == list(range(1, 11))


def test_ringbuf_generator_closed_or_collected(ring_producer: RingProducer) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(10)
        it = rb.read(timeout_ms=0)
        first = [next(it).data for _ in range(2)]
        it.close()
        it = rb.read(timeout_ms=0)
        first += [next(it).data for _ in range(3)]
        del it
        gc.collect()
        assert seqs(first + _all(rb)) == list(range(1, 11))


def test_ringbuf_consume_while_a_generator_is_suspended(ring_producer: RingProducer) -> None:
    got: list[bytes] = []
    with ringtool.RingBuffer(ring_producer.events, lambda d: got.append(bytes(d))) as rb:
        ring_producer.emit(10)
        it = rb.read(timeout_ms=0)
        mine = [next(it).data for _ in range(3)]
        assert rb.consume() == 7  # the records copied by the generator but not yielded
        ring_producer.emit(2)
        mine += [r.data for r in it]  # the stale copies are dropped; new data comes
        assert seqs(mine) == [1, 2, 3, 11, 12]
        assert seqs(got) == list(range(4, 11))


def test_ringbuf_two_generators_interleaved(ring_producer: RingProducer) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(20)
        a, b = rb.read(timeout_ms=0), rb.read(timeout_ms=0)
        out = [next(a).data, next(b).data, next(a).data, next(b).data]
        out += _first(a, 5)
        del a
        out += [r.data for r in b]
        assert seqs(out) == list(range(1, 21))


def test_ringbuf_random_early_exits_lose_and_duplicate_nothing(ring_producer: RingProducer) -> None:
    rng = random.Random(11)
    got: list[bytes] = []
    emitted = 0
    with ringtool.RingBuffer(ring_producer.events, lambda d: got.append(bytes(d))) as rb:
        for _ in range(60):
            n = rng.randrange(0, 300)
            ring_producer.emit(n) if n else None
            emitted += n
            how = rng.choice(["break", "close", "gc", "consume", "lease", "batch"])
            if how == "consume":
                rb.consume_n(rng.randrange(0, 50))
            elif how == "lease":
                with rb.lease(rng.randrange(0, 50)) as views:
                    got.extend(bytes(v) for v in views)
            elif how == "batch":
                got.extend(bytes(r) for r in rb.read_batch("V24", rng.randrange(0, 50)))
            else:
                it = rb.read(timeout_ms=0)
                got.extend(_first(it, rng.randrange(1, 40)))
                if how == "close":
                    it.close()
                elif how == "gc":
                    del it
                    gc.collect()
        rb.consume()
        assert seqs(got) == list(range(1, emitted + 1))
        assert sum(rb.dropped()) == 0


def test_perfbuf_break_and_close_keep_the_rest(perf: PerfProducer) -> None:
    with ringtool.PerfBuffer(perf.events, None, cpus=[0], page_cnt=64) as pb:
        base = perf.produced(0)
        perf.emit(10, 0)
        it = pb.read(timeout_ms=0)
        got = [decode(next(it).data)[0] for _ in range(3)]
        it.close()
        got += [decode(r)[0] for r in _first(pb.read(timeout_ms=0), 2)]
        got += [decode(r.data)[0] for r in pb.read(timeout_ms=0)]
        assert got == list(range(base + 1, base + 11))
        assert pb.lost() == {0: 0}


def test_perfbuf_random_early_exits(perf: PerfProducer) -> None:
    rng = random.Random(5)
    got: list[int] = []
    with ringtool.PerfBuffer(
        perf.events, lambda c, d: got.append(decode(d)[0]), cpus=[0], page_cnt=64
    ) as pb:
        base = perf.produced(0)
        for _ in range(40):
            perf.emit(rng.randrange(1, 150), 0)
            if rng.random() < 0.3:
                pb.consume_n(rng.randrange(0, 30))
            it = pb.read(timeout_ms=0)
            got += [decode(r)[0] for r in _first(it, rng.randrange(1, 50))]
            if rng.random() < 0.5:
                del it
        pb.consume()
        assert got == list(range(base + 1, perf.produced(0) + 1))
        assert pb.lost() == {0: 0}


def test_ringbufgroup_consumer_break_keeps_the_rest() -> None:
    p = GroupProducer.new(1)
    try:
        p.run_pinned("pcpu_output", 50)
        with p.group.consumer() as rb:
            first = _first(rb.read(timeout_ms=0), 7)
            rest = _all(rb)
        per_cpu: dict[int, list[int]] = {}
        for rec in first + rest:
            _ts, seq, cpu, _magic = struct.unpack("<QQII", rec)
            per_cpu.setdefault(cpu, []).append(seq)
        assert all(v == list(range(1, 51)) for v in per_cpu.values()), per_cpu
        assert len(first + rest) == 50 * len(per_cpu)
    finally:
        p.close()


def test_abandoned_merge_gives_back_what_it_did_not_deliver() -> None:
    p = GroupProducer.new(1)
    try:
        p.run_pinned("pcpu_output", 100)
        with p.group.consumer() as rb:
            rings = [rb.ring(i) for i in range(rb.ring_cnt)]
            m = merge_rings(rings, u64_at(0), batch=64)
            first = [ev[1] for ev in m.take(10)]
            del m
            gc.collect()
            rest = [ev[1] for ev in merge_rings(rings, u64_at(0))]
        assert len(first) == 10
        assert sorted(first + rest) == sorted(set(first + rest))  # no duplicate
        assert len(first + rest) == 100 * len(rings)
    finally:
        p.close()


# --- item 2: a callback that raises -----------------------------------------------------


def test_ringbuf_raising_callback_consumes_its_record(ring_producer: RingProducer) -> None:
    got: list[int] = []

    def cb(d: memoryview) -> None:
        seq = seqs([bytes(d)])[0]
        if seq == 3:
            raise RuntimeError("transient")
        got.append(seq)

    with ringtool.RingBuffer(ring_producer.events, cb) as rb:
        ring_producer.emit(5)
        with pytest.raises(RuntimeError, match="transient"):
            rb.consume()
        assert rb.consume() == 2
        assert got == [1, 2, 4, 5]  # 3 was delivered once (and raised), not again


def test_ringbuf_poison_record_does_not_block_the_ring(ring_producer: RingProducer) -> None:
    calls = 0

    def cb(d: memoryview) -> None:
        nonlocal calls
        calls += 1
        raise ValueError("always")

    with ringtool.RingBuffer(ring_producer.events, cb) as rb:
        ring_producer.emit(3)
        for _ in range(3):
            with pytest.raises(ValueError):
                rb.consume()
        assert rb.consume() == 0 and calls == 3
        assert rb.ring(0).avail_data_size == 0


def test_auto_callback_error_is_consumed_and_reported(ring_producer: RingProducer) -> None:
    seen: list[int] = []

    def cb(d: memoryview) -> None:
        seen.append(seqs([bytes(d)])[0])
        raise RuntimeError("bad record")

    rb = ringtool.RingBuffer(ring_producer.events, cb, auto_callback=True)
    try:
        ring_producer.emit(3)
        rb._auto_thread.join(5)  # type: ignore[union-attr]  # the thread stops on it
        assert isinstance(rb.auto_error, RuntimeError)
        assert seen == [1]
        with pytest.raises(ConsumerStateError, match="bad record"):
            rb.consume()
    finally:
        rb.close()


# --- lease ------------------------------------------------------------------------------


def test_lease_block_that_raises_commits_everything(ring_producer: RingProducer) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(5)
        with pytest.raises(RuntimeError), rb.lease() as lease:
            assert len(lease) == 5
            raise RuntimeError("while processing")
        ring_producer.emit(1)
        assert seqs(_all(rb)) == [6]


def test_lease_release_count_gives_the_rest_back(ring_producer: RingProducer) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(5)
        lease = rb.lease()
        assert seqs([bytes(v) for v in lease.views[:2]]) == [1, 2]
        lease.release(2)
        assert seqs(_all(rb)) == [3, 4, 5]
