"""RingBuffer.lease_batch on a real RINGBUF filled by BPF_PROG_TEST_RUN: arrays that
are views of the mapped ring, one commit per ring, the lease rules of
ringtool/readers/consumer.py (all committed when the block exits, also when it
raises; ``release(n)`` commits the first n, the rest come again)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ringtool
from ringtool.bench.libbpf_drain import LibbpfDrain
from ringtool.bench.ringbuf import drain_rows
from ringtool.errors import ArgumentError, ConsumerStateError
from ringtool.readers.ringbuf_group import RingBufGroup
from tests.helpers.producers import MAGIC, TEST_EVENT, RingProducer

pytestmark = pytest.mark.kernel


def test_views_of_the_ring_committed_when_the_block_exits(ring_producer: RingProducer) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(500)
        ring = rb.ring(0)
        with rb.lease_batch(TEST_EVENT) as lease:
            assert len(lease) == 500
            arr = lease.array()
            assert arr["seq"].tolist() == list(range(1, 501))
            assert set(arr["magic"].tolist()) == {MAGIC}
            assert not arr.flags.owndata  # a view, not a copy
            assert ring.consumer_pos == 0 < ring.producer_pos
            with pytest.raises(ConsumerStateError):
                rb.read_batch(TEST_EVENT)  # the lease holds the consumer
        assert ring.consumer_pos == ring.producer_pos == 500 * 32
        assert lease.arrays == []
        ring_producer.emit(10)
        assert rb.read_batch(TEST_EVENT)["seq"].tolist() == list(range(501, 511))


def test_a_raising_block_commits_everything(ring_producer: RingProducer) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(100)
        with pytest.raises(RuntimeError), rb.lease_batch(TEST_EVENT):
            raise RuntimeError("the block fails")
        assert rb.ring(0).avail_data_size == 0
        assert len(rb.read_batch(TEST_EVENT)) == 0


def test_release_n_commits_the_first_n_and_the_rest_comes_again(
    ring_producer: RingProducer,
) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(100)
        lease = rb.lease_batch(TEST_EVENT, limit=60)
        assert len(lease) == 60 and lease.array()["seq"].tolist() == list(range(1, 61))
        with pytest.raises(ArgumentError):
            lease.release(61)
        lease.release(25)
        assert rb.ring(0).consumer_pos == 25 * 32
        assert rb.read_batch(TEST_EVENT)["seq"].tolist() == list(range(26, 101))


def test_an_empty_group_leases_no_arrays() -> None:
    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=64 * 4096)
    try:
        with group.consumer() as rb, rb.lease_batch(TEST_EVENT) as lease:
            assert len(lease) == 0 and lease.arrays == []
            with pytest.raises(ArgumentError):
                lease.array()
    finally:
        group.close()


def test_equal_to_read_batch(ring_producer: RingProducer) -> None:
    with ringtool.RingBuffer(ring_producer.events) as rb:
        ring_producer.emit(300)
        with rb.lease_batch(TEST_EVENT) as lease:
            leased = lease.array().copy()
        ring_producer.emit(300)
        copied = rb.read_batch(TEST_EVENT)
    assert np.array_equal(leased["seq"] + 300, copied["seq"])


def test_libbpf_c_drain_consumes_the_same_ring(ring_producer: RingProducer, tmp_path: Path) -> None:
    drain = LibbpfDrain(ring_producer.events.map_fd, tmp_path)
    try:
        ring_producer.emit(100)
        records, ns = drain.drain()
        assert records == 100 and ns > 0
        with ringtool.RingBuffer(ring_producer.events) as rb:  # libbpf committed them
            assert rb.ring(0).avail_data_size == 0
            ring_producer.emit(5)
            assert drain.drain()[0] == 5
    finally:
        drain.close()


def test_bench_drain_has_zerocopy_and_libbpf_rows() -> None:
    rows = drain_rows(repeats=1, quick=True)
    by = {r["consumer"]: r for r in rows}
    for name in ("ringtool-zerocopy", "libbpf-c", "bcc"):
        assert "skipped" not in by[name], by[name]  # setup installs gcc and libbpf-dev
        assert by[name]["records"] == by["bcc"]["records"] > 0
        assert by[name]["ns_per_record"] > 0 and by[name]["ratio_libbpf"] > 0
