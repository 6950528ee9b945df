"""Moving a group's buffer to a bigger (and a smaller) ring while a real BPF program
writes into it (ringtool.readers.ringbuf_resize): every record has a per-CPU sequence
number, so "nothing lost, nothing read twice, order kept" is checked exactly."""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pytest

from ringtool.kernel import bpf
from ringtool.merge import u64_at
from ringtool.readers.ringbuf import RingBuffer
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.readers.ringbuf_resize import BufferSource, RingResizer, Switch
from tests.helpers.producers import GROUP_DTYPE, PACKET, GroupProducer

pytestmark = pytest.mark.kernel

READ_AT_ONCE = 4096
EVENT = GROUP_DTYPE


def _produce(
    prod: GroupProducer, cpu: int, stop: threading.Event, errors: list[BaseException]
) -> None:
    try:
        os.sched_setaffinity(0, {cpu})
        while not stop.is_set():
            bpf.prog_test_run(prod.fds["pcpu_reserve"], data=PACKET, repeat=200)
    except BaseException as exc:  # re-raised by the test
        errors.append(exc)


class _Reader:
    """Reads buffer ``bid`` in batches (the old ring's records first, then the new
    ring's: exactly once, not ordered across a switch) or through a BufferSource
    (exactly once and in order)."""

    def __init__(self, resizer: RingResizer, bid: int, style: str) -> None:
        self.resizer = resizer
        self.style = style
        self.source = BufferSource(resizer, bid, u64_at(0))
        self.parts: list[np.ndarray] = []  # type: ignore[type-arg]

    def read(self) -> None:
        if self.style == "batch":
            self.parts.append(self.resizer.read_batch(EVENT, 1 << 20))
            self.parts.append(self.resizer.consumer.read_batch(EVENT))
            return
        recs = []
        # at most READ_AT_ONCE a call, as a trace's read loop takes (OrderedReader.read's
        # limit): a producer faster than this loop (the emulated VM: a kernel loop
        # against a Python one) would otherwise keep it from ever returning
        while len(recs) < READ_AT_ONCE and self.source.peek() is not None:
            ev = self.source.pop()
            assert ev is not None
            recs.append(ev[1])
        self.source.settle()
        self.parts.append(np.frombuffer(b"".join(recs), dtype=EVENT))


@pytest.mark.parametrize("style", ["batch", "ordered"])
@pytest.mark.parametrize("sizes", [(4, 16, 64), (64, 8)], ids=["grow", "shrink"])
def test_switches_under_load_lose_and_repeat_nothing(sizes: tuple[int, ...], style: str) -> None:
    cpu = min(os.sched_getaffinity(0))
    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=sizes[0] * 4096)
    prod = GroupProducer(group)
    rb = group.consumer()
    resizer = RingResizer(group, rb)
    bid = group.layout.cpu_to_buffer[cpu]
    stop = threading.Event()
    errors: list[BaseException] = []
    reader = _Reader(resizer, bid, style)
    worker = threading.Thread(target=_produce, args=(prod, cpu, stop, errors))
    try:
        worker.start()
        time.sleep(0.05)
        for pages in sizes[1:]:
            assert resizer.resize(bid, pages * 4096) is not None
            ended = []
            deadline = time.monotonic() + 30
            while not ended:
                assert time.monotonic() < deadline, "the switch did not end"
                reader.read()
                ended = resizer.step()
            assert [s.state for s in ended] == ["done"], ended
            assert group.ring_size(bid) == pages * 4096 == rb.ring(bid).size
            assert resizer.retiring(bid) is None
            time.sleep(0.02)
        stop.set()
        worker.join()
        assert not errors, errors
        for _ in range(3):
            reader.read()
        got = np.concatenate(reader.parts)
        mine = got[got["cpu"] == cpu]
        produced = prod.produced(cpu)
        dropped = group.dropped()[cpu]
        seq = mine["seq"].astype(np.int64)
        if style == "batch":  # in order within each ring only
            seq = np.sort(seq)
        bad = np.nonzero(np.diff(seq) <= 0)[0]
        assert not len(bad), [(i, seq[max(0, i - 3) : i + 4].tolist()) for i in bad[:5]]
        assert len(mine) + dropped == produced, (len(mine), dropped, produced)
        assert produced > 1000
    finally:
        stop.set()
        worker.join()
        resizer.close()
        rb.close()
        prod.close()
        group.close()


def test_growth_ends_drops_of_a_steady_overload() -> None:
    """A ring too small for what is produced between two reads drops; after the move to
    a ring 16 times as big, the same load and read pace drop nothing."""
    cpu = min(os.sched_getaffinity(0))
    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=4096)
    prod = GroupProducer(group)
    rb = group.consumer()
    resizer = RingResizer(group, rb)
    bid = group.layout.cpu_to_buffer[cpu]
    try:
        prod.emit(500, cpu)  # 500 records of 32 bytes: 16000 bytes into a 4 KiB ring
        before = group.dropped()[cpu]
        assert before > 0
        got = len(rb.read_batch(EVENT))
        assert got + before == prod.produced(cpu)
        resizer.resize(bid, 64 * 4096)
        while not (ended := resizer.step()):
            time.sleep(0.001)
        assert ended[0].state == "done"
        prod.emit(500, cpu)
        assert group.dropped()[cpu] == before
        assert len(resizer.read_batch(EVENT, 1 << 20)) + len(rb.read_batch(EVENT)) == 500
    finally:
        resizer.close()
        rb.close()
        prod.close()
        group.close()


@dataclass
class _Held:
    """A 16-page ring of this CPU's buffer, its producer and consumer, and a resizer
    whose publish (the group's ``swap_ring``) waits for ``gate``, then runs, or fails
    (OSError) with ``fail``: a switch held between map and publish, as a worker
    waiting for its CPU on a busy machine holds it."""

    cpu: int
    bid: int
    group: RingBufGroup
    prod: GroupProducer
    rb: RingBuffer
    resizer: RingResizer
    gate: threading.Event


@contextmanager
def _held_publish(fail: bool = False) -> Iterator[_Held]:
    cpu = min(os.sched_getaffinity(0))
    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=16 * 4096)
    prod = GroupProducer(group)
    rb = group.consumer()
    resizer = RingResizer(group, rb)
    gate = threading.Event()
    swap = group.swap_ring

    def held(buffer_id: int, fd: int) -> None:
        gate.wait(30)
        if fail:
            raise OSError("held publish failed (the test)")
        swap(buffer_id, fd)

    group.swap_ring = held  # type: ignore[method-assign]
    try:
        yield _Held(cpu, group.layout.cpu_to_buffer[cpu], group, prod, rb, resizer, gate)
    finally:
        gate.set()
        resizer.close()
        rb.close()
        prod.close()
        group.close()


def _until_mapped(resizer: RingResizer, bid: int) -> None:
    deadline = time.monotonic() + 30
    while resizer.retiring(bid) is None:
        assert time.monotonic() < deadline, "the new ring was never mapped"
        assert not resizer.step(), "the switch ended before it was mapped"
        time.sleep(0.001)


def _until_ended(resizer: RingResizer) -> list[Switch]:
    deadline = time.monotonic() + 30
    while not (ended := resizer.step()):
        assert time.monotonic() < deadline, "the switch did not end"
        time.sleep(0.001)
    return ended


def _readable(fd: int, timeout_s: float) -> bool:
    return bool(select.select([fd], [], [], timeout_s)[0])


def test_records_of_the_retiring_ring_wake_the_reader() -> None:
    """Until the publish returns, the programs write the old ring, which the consumer
    no longer reads: its records still make the consumer's epoll fd readable (a trace
    sleeps there: woken only by its timeout, a small old ring at a high rate would
    fill first), without a ring index the consumer would read for them; once retired,
    the old ring is out of the epoll set and the new ring's records wake it."""
    with _held_publish() as h:
        assert h.resizer.resize(h.bid, 64 * 4096) is not None
        _until_mapped(h.resizer, h.bid)
        epfd = h.rb.epoll_fd()
        assert not _readable(epfd, 0)
        h.prod.emit(10, h.cpu)  # into the old ring: the publish has not run
        assert _readable(epfd, 5), "the old ring's records did not wake the reader"
        assert h.rb.poll(0) == 0  # no ring of the consumer's has them
        assert len(h.resizer.read_batch(EVENT, 1 << 20)) == 10
        h.gate.set()
        assert [s.state for s in _until_ended(h.resizer)] == ["done"]
        assert h.resizer.retiring(h.bid) is None
        assert not _readable(epfd, 0)
        h.prod.emit(5, h.cpu)  # into the new ring
        assert _readable(epfd, 5)
        assert len(h.rb.read_batch(EVENT)) == 5
        assert h.prod.produced(h.cpu) == 15 and h.group.dropped()[h.cpu] == 0


def test_a_failed_publish_reads_and_watches_the_old_ring_again() -> None:
    """A publish that fails leaves the programs on the old ring: the consumer reads it
    again, as its ring (its records wake a poll, which delivers them), and the new ring
    is given back."""
    with _held_publish(fail=True) as h:
        assert h.resizer.resize(h.bid, 64 * 4096) is not None
        _until_mapped(h.resizer, h.bid)
        h.prod.emit(3, h.cpu)
        h.gate.set()
        ended = _until_ended(h.resizer)
        assert [s.state for s in ended] == ["failed"]
        assert "could not be swapped in" in (ended[0].error or "")
        assert h.group.ring_size(h.bid) == 16 * 4096 == h.rb.ring(h.bid).size
        assert h.resizer.retiring(h.bid) is None
        assert len(h.rb.read_batch(EVENT)) == 3
        h.prod.emit(4, h.cpu)
        assert _readable(h.rb.epoll_fd(), 5)
        assert len(h.rb.read_batch(EVENT)) == 4
