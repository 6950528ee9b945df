"""Per-CPU ring buffer groups read in timestamp order, with real BPF producers.

Producers: bpf/percpu_ringbuf_test.c (SCHED_CLS) run by BPF_PROG_TEST_RUN from one
thread pinned to each CPU; each record is ``{u64 ts (bpf_ktime_get_ns), u64 seq (per
CPU, from 1), u32 cpu, u32 magic}`` written into the ring of its CPU's buffer.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ringtool.kernel import bpf
from ringtool.merge import Algorithm, ListSource, Merger, ReorderWindow, merge_sources, u64_at
from ringtool.readers.ringbuf_group import BPF_INCLUDE_DIR, RingBufGroup, merge_rings
from tests.helpers.producers import GROUP_EVENT, GROUP_MAGIC, PACKET, GroupProducer

pytestmark = pytest.mark.kernel

EVENT, MAGIC = GROUP_EVENT, GROUP_MAGIC
SRC = str(BPF_INCLUDE_DIR / "percpu_ringbuf_test.c").encode()


def _cpus() -> list[int]:
    return sorted(os.sched_getaffinity(0))


@pytest.fixture
def producer(request: pytest.FixtureRequest) -> Iterator[GroupProducer]:
    p = GroupProducer.new(request.param)
    yield p
    p.close()


def _check(
    merged: list[tuple[int, int, bytes]], m: Merger[Any], group: RingBufGroup, per_cpu: int
) -> None:
    """Nothing lost, each event in its CPU's buffer, per-CPU order kept, exact counts."""
    seqs: dict[int, list[int]] = {}
    ooo = 0
    per = [0] * group.buffers
    prev = None
    for ts, bid, rec in merged:
        ts2, seq, cpu, magic = EVENT.unpack(rec)
        assert magic == MAGIC and ts2 == ts
        assert bid == group.layout.cpu_to_buffer[cpu]
        seqs.setdefault(cpu, []).append(seq)
        if prev is not None and ts < prev:
            ooo += 1
            per[bid] += 1
        prev = ts
    assert sum(group.dropped()) == 0
    assert sorted(seqs) == _cpus()
    for cpu, got in seqs.items():
        if group.layout.cpus_per_buffer == 1:
            assert got == list(range(1, per_cpu + 1)), f"cpu {cpu}"
        else:  # a shared buffer may reorder, never lose
            assert sorted(got) == list(range(1, per_cpu + 1)), f"cpu {cpu}"
    stats = m.stats
    assert stats.delivered == len(merged)
    assert stats.out_of_order == ooo
    assert list(stats.out_of_order_per_buffer) == per


def _drain(m: Merger[bytes]) -> list[tuple[int, int, bytes]]:
    return [(ev[0], m.last_buffer, ev[1]) for ev in m]


@pytest.mark.parametrize("producer", [1, 2, 0], indirect=True, ids=["per-cpu", "2-cpus", "shared"])
def test_all_data_present(producer: GroupProducer) -> None:
    n = 3000
    producer.run_pinned("pcpu_output", n)
    producer.run_pinned("pcpu_reserve", n)
    rb = producer.group.consumer()
    try:
        rings = [rb.ring(i) for i in range(rb.ring_cnt)]
        assert len(rings) == producer.group.buffers
        # snapshot every ring, then merge the same data with both algorithms
        raw = [r.copy_out(1 << 30) for r in rings]
    finally:
        rb.close()
    ts_of = u64_at(0)
    outs = []
    algorithms: tuple[Algorithm, ...] = ("default", "optimized")
    for algorithm in algorithms:
        m = merge_sources(
            [ListSource((ts_of(r), r) for r in recs) for recs in raw], algorithm=algorithm
        )
        merged = _drain(m)
        _check(merged, m, producer.group, 2 * n)
        if producer.group.layout.cpus_per_buffer == 1:
            assert m.stats.out_of_order == 0  # sorted buffers, all data present
        s = m.stats
        outs.append((merged, s.out_of_order_per_buffer, s.max_lateness_ns))
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    ("producer", "algorithm", "window_us"),
    [
        (1, "optimized", None),
        (1, "default", None),
        (1, "optimized", 1_000_000),
        (0, "optimized", 1_000_000),
    ],
    indirect=["producer"],
)
def test_live_merge_while_producing(
    producer: GroupProducer, algorithm: Algorithm, window_us: int | None
) -> None:
    repeat, chunks = 500, 20
    rb = producer.group.consumer()
    try:
        m = merge_rings(
            [rb.ring(i) for i in range(rb.ring_cnt)],
            u64_at(0),
            algorithm=algorithm,
            window_us=window_us,
            batch=64,
        )
        merged: list[tuple[int, int, bytes]] = []
        done = threading.Event()

        def produce() -> None:
            try:
                producer.run_pinned("pcpu_output", repeat, chunks)
            finally:
                done.set()

        t = threading.Thread(target=produce)
        t.start()
        deadline = time.monotonic() + 60
        while not done.is_set() and time.monotonic() < deadline:
            merged += _drain(m)
        t.join()
        merged += _drain(m)  # what was left after the producers stopped
        if isinstance(m, ReorderWindow):
            m.advance(time.monotonic_ns())
            merged += _drain(m)
            merged += [(ev[0], m.last_buffer, ev[1]) for ev in m.flush()]
        _check(merged, m, producer.group, repeat * chunks)
        if window_us is not None:
            assert m.stats.out_of_order == 0
            assert [x[0] for x in merged] == sorted(x[0] for x in merged)
    finally:
        rb.close()


def test_offline_cpu_has_no_buffer_and_counts_drops() -> None:
    """Give buffers to CPU 0 only: events from other CPUs are dropped and counted."""
    cpus = _cpus()
    if len(cpus) < 2:
        pytest.skip("needs 2 CPUs")
    import bcc

    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=1 << 16, cpus=[cpus[0]])
    b = bcc.BPF(src_file=SRC, cflags=group.cflags())
    try:
        fd = b.load_func(b"pcpu_output", bcc.BPF.SCHED_CLS).fd

        def on(cpu: int, fn: Callable[[], Any]) -> None:
            def pinned() -> None:
                os.sched_setaffinity(0, {cpu})
                fn()

            t = threading.Thread(target=pinned)
            t.start()
            t.join()

        on(cpus[0], lambda: bpf.prog_test_run(fd, data=PACKET, repeat=10))
        on(cpus[1], lambda: bpf.prog_test_run(fd, data=PACKET, repeat=7))
        rb = group.consumer()
        try:
            recs = rb.ring(0).copy_out(100)
        finally:
            rb.close()
        assert len(recs) == 10
        assert {EVENT.unpack(r)[2] for r in recs} == {cpus[0]}
        assert group.dropped()[cpus[1]] == 7
    finally:
        b.cleanup()
        group.close()
