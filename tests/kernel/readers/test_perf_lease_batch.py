"""PerfBuffer.lease_batch on a real PERF_EVENT_ARRAY filled by bpf/perf_test.c (run by
BPF_PROG_TEST_RUN on CPU 0): arrays that are views of the mapped perf ring, copies of
the records that wrap it, one data_tail commit per CPU, the lease rules of
ringtool/readers/consumer.py, and PERF_RECORD_LOST counted as by the other styles."""

from __future__ import annotations

from pathlib import Path

import pytest

import ringtool
from ringtool.bench import perfbuf_libbpf
from ringtool.errors import ArgumentError, ConsumerStateError
from tests.helpers.producers import PERF_EVENT as EVENT
from tests.helpers.producers import PERF_MAGIC as MAGIC
from tests.helpers.producers import PerfProducer

pytestmark = pytest.mark.kernel


def test_views_of_the_ring_committed_when_the_block_exits(perf_producer: PerfProducer) -> None:
    with ringtool.PerfBuffer(perf_producer.events, None, cpus=[0], page_cnt=64) as pb:
        perf_producer.emit(500, 0)
        page = pb.buffers[0].ring.page
        with pb.lease_batch(EVENT) as lease:
            assert len(lease) == 500 and lease.array_rings == [0]
            arr = lease.array()
            assert arr["seq"].tolist() == list(range(1, 501))
            assert set(arr["magic"].tolist()) == {MAGIC} and set(arr["cpu"].tolist()) == {0}
            assert not arr.flags.owndata and arr.strides == (32,)  # a view, not a copy
            assert page.data_tail == 0 < page.data_head
            with pytest.raises(ConsumerStateError):
                pb.read_batch(EVENT)  # the lease holds the consumer
        assert page.data_tail == page.data_head == 500 * 32
        assert lease.arrays == []
        perf_producer.emit(10, 0)
        assert pb.read_batch(EVENT)["seq"].tolist() == list(range(501, 511))


def test_a_raising_block_commits_everything(perf_producer: PerfProducer) -> None:
    with ringtool.PerfBuffer(perf_producer.events, None, cpus=[0], page_cnt=64) as pb:
        perf_producer.emit(100, 0)
        with pytest.raises(RuntimeError), pb.lease_batch(EVENT):
            raise RuntimeError("the block fails")
        page = pb.buffers[0].ring.page
        assert page.data_tail == page.data_head
        assert len(pb.read_batch(EVENT)) == 0


def test_release_n_commits_the_first_n_and_the_rest_comes_again(
    perf_producer: PerfProducer,
) -> None:
    with ringtool.PerfBuffer(perf_producer.events, None, cpus=[0], page_cnt=64) as pb:
        perf_producer.emit(100, 0)
        lease = pb.lease_batch(EVENT, limit=60)
        assert len(lease) == 60 and lease.array()["seq"].tolist() == list(range(1, 61))
        with pytest.raises(ArgumentError):
            lease.release(61)
        lease.release(25)
        assert pb.buffers[0].ring.page.data_tail == 25 * 32
        assert pb.read_batch(EVENT)["seq"].tolist() == list(range(26, 101))


def test_records_that_wrap_the_ring_are_copies() -> None:
    perf_producer = PerfProducer(pad_words=1)  # 40-byte records: some wrap the 16 KiB ring
    try:
        with ringtool.PerfBuffer(perf_producer.events, None, cpus=[0], page_cnt=4) as pb:
            seq = 0
            copies = 0
            for _ in range(12):
                perf_producer.emit(150, 0)
                with pb.lease_batch(EVENT) as lease:
                    assert lease.array()["seq"].tolist() == list(range(seq + 1, seq + 151))
                    for a in lease.arrays:
                        assert len(a) == 1 if a.flags.owndata else a.strides == (40,)
                        copies += bool(a.flags.owndata)
                seq += 150
            assert copies > 0  # 12 * 6000 bytes went round the ring 4 times
            assert pb.lost() == {0: 0} and perf_producer.failed(0) == 0
    finally:
        perf_producer.close()


def test_lost_records_counted_between_leases(perf_producer: PerfProducer) -> None:
    lost_calls: list[tuple[int, int]] = []
    with ringtool.PerfBuffer(
        perf_producer.events, None, lambda c, n: lost_calls.append((c, n)), page_cnt=1, cpus=[0]
    ) as pb:
        perf_producer.emit(1000, 0)  # one page holds ~127: the rest fail
        with pb.lease_batch(EVENT) as lease:
            first = lease.array()["seq"].tolist()
        failed = perf_producer.failed(0)
        assert first == list(range(1, len(first) + 1)) and len(first) + failed == 1000
        perf_producer.emit(3, 0)  # the first output that finds space writes PERF_RECORD_LOST
        with pb.lease_batch(EVENT) as lease:
            assert lease.array()["seq"].tolist() == [1001, 1002, 1003]
        assert pb.lost() == {0: failed} and lost_calls == [(0, failed)]


def test_libbpf_c_drain_consumes_the_same_map(perf_producer: PerfProducer, tmp_path: Path) -> None:
    binary = perfbuf_libbpf.build(tmp_path)
    drain = perfbuf_libbpf.LibbpfPerfDrain(binary, perf_producer.events.map_fd, 8, cpu=0)
    try:
        perf_producer.emit(100, 0)  # into the helper's buffer: its fd is in the map
        records, ns = drain.drain()
        assert records == 100 and ns > 0
        perf_producer.emit(5, 0)
        assert drain.drain()[0] == 5
    finally:
        drain.close()  # perf_buffer__free deletes the map slot
    perf_producer.emit(2, 0)
    assert perf_producer.failed(0) == 2
    with ringtool.PerfBuffer(perf_producer.events, None, cpus=[0]) as pb:
        perf_producer.emit(3, 0)
        assert pb.read_batch(EVENT)["seq"].tolist() == [108, 109, 110]  # 106, 107 failed
