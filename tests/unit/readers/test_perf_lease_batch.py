"""PerfBuffer.lease_batch on hand-built perf rings (tests/helpers/builders/perf.py plays the
kernel): numpy arrays that are views of the single-mapped data area for runs that do
not wrap it, copies for a wrapped or short record, LOST records counted once, and the
lease rules of ringtool/readers/consumer.py (everything committed when the block
exits, also when it raises; ``release(n)`` the first n, the rest delivered again)."""

from __future__ import annotations

import gc
import os
import struct

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from ringtool.errors import ArgumentError, ConsumerStateError
from ringtool.readers.consumer import MultiRingConsumer
from ringtool.readers.perf_reader_ring import PerfReaderRing
from tests.helpers.builders.perf import FakeKernel

EV = np.dtype([("seq", "<u8"), ("ring", "<u4"), ("magic", "<u4")])  # 16 bytes: raw 20
MAGIC = 0x46524550


def payload(seq: int, ring: int = 0, size: int = 16) -> bytes:
    return struct.pack("<QII", seq, ring, MAGIC)[:size]


class HandPerfConsumer(MultiRingConsumer):
    """The consumer base class (what PerfBuffer is) over hand-built perf rings, one
    per "CPU"; eventfds stand in for the perf event fds."""

    def __init__(self, kernels: list[FakeKernel]) -> None:
        super().__init__(what="HandPerfConsumer")
        self.efds: list[int] = []
        for i, k in enumerate(kernels):
            fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
            self.efds.append(fd)
            self._add_ring(PerfReaderRing(i, i, k.ring, fd, None))

    def close(self) -> None:
        super().close()
        while self.efds:
            os.close(self.efds.pop())


def test_a_run_is_one_strided_view_of_the_data_area_and_nothing_is_committed() -> None:
    k = FakeKernel(4096)
    for i in range(10):
        k.put(k.sample_rec(payload(i)))
    arrays, start, end, n = k.ring.batch(EV, 100, copy=False)
    assert (n, start, end, len(arrays)) == (10, 0, 10 * 32, 1)
    (arr,) = arrays
    assert arr["seq"].tolist() == list(range(10)) and set(arr["magic"].tolist()) == {MAGIC}
    assert not arr.flags.owndata and arr.strides == (32,)
    assert np.shares_memory(arr, np.frombuffer(k.data, np.uint8))
    assert k.tail == 0  # the caller commits
    k.data[12:20] = struct.pack("<Q", 777)  # the kernel rewrites record 0: the view shows it
    assert arr["seq"][0] == 777


def test_a_record_that_wraps_the_ring_is_a_copy_between_views() -> None:
    k = FakeKernel(256, start=256 * 3 + 208)  # records at 208, 240 (wraps: 240..272), 16..
    for i in range(5):
        k.put(k.sample_rec(payload(i)))
    arrays, _start, end, n = k.ring.batch(EV, 100, copy=False)
    assert n == 5 and end == k.head
    assert [a["seq"].tolist() for a in arrays] == [[0], [1], [2, 3, 4]]
    assert [a.flags.owndata for a in arrays] == [False, True, False]
    assert arrays[1]["magic"][0] == MAGIC  # reassembled across the end


def test_short_payload_is_a_zero_filled_copy_and_a_longer_one_a_view_of_its_start() -> None:
    k = FakeKernel(4096)
    k.put(k.sample_rec(payload(1)))
    k.put(k.sample_rec(payload(2, size=8)))  # raw 12 < 16: copy, zero-filled
    k.put(k.sample_rec(payload(3) + b"\xff" * 16))  # raw 36 >= 16: view of the first 16
    arrays, _s, _e, n = k.ring.batch(EV, 100, copy=False)
    assert n == 3 and [a["seq"].tolist() for a in arrays] == [[1], [2], [3]]
    assert [a.flags.owndata for a in arrays] == [False, True, False]
    assert arrays[1]["magic"].tolist() == [0]


def test_lost_in_the_middle_counted_once_even_when_given_back() -> None:
    k = FakeKernel(4096)
    for i in range(3):
        k.put(k.sample_rec(payload(i)))
    k.put(k.lost_rec(5))
    for i in range(3, 6):
        k.put(k.sample_rec(payload(i)))
    with HandPerfConsumer([k]) as c:
        lease = c.lease_batch(EV)
        assert len(lease) == 6 and [len(a) for a in lease.arrays] == [3, 3]
        assert k.ring.lost_total == 5 and k.lost == [(3, 5)]
        lease.release(2)  # before the LOST record: it is walked again below
        assert k.tail == 2 * 32
        with c.lease_batch(EV) as again:
            assert again.array()["seq"].tolist() == [2, 3, 4, 5]
        assert k.tail == k.head
        assert k.ring.lost_total == 5 and k.lost == [(3, 5)]  # not counted twice


def two_rings() -> tuple[list[FakeKernel], HandPerfConsumer]:
    ks = [FakeKernel(1024, start=2**32 - 112), FakeKernel(1024)]  # 8-aligned, as the kernel
    for r, k in enumerate(ks):
        for i in range(10):
            k.put(k.sample_rec(payload(i, r)))
    return ks, HandPerfConsumer(ks)


def test_block_exit_commits_every_ring_once_also_when_it_raises() -> None:
    ks, c = two_rings()
    with c:
        with pytest.raises(RuntimeError), c.lease_batch(EV) as lease:
            # ring 0: a run to the end, the record that wraps it (a copy), a run from 0
            assert len(lease) == 20 and lease.array_rings == [0, 0, 0, 1]
            assert all(k.tail != k.head for k in ks)
            with pytest.raises(ConsumerStateError):
                c.read_batch(EV)  # the lease holds the consumer
            raise RuntimeError("the block fails")
        assert [k.tail for k in ks] == [k.head for k in ks]
        assert lease.arrays == []
        assert len(c.read_batch(EV)) == 0


def test_release_n_commits_the_first_n_across_rings_and_the_rest_comes_again() -> None:
    ks, c = two_rings()
    with c:
        lease = c.lease_batch(EV, limit=15)
        assert len(lease) == 15
        with pytest.raises(ArgumentError):
            lease.release(16)
        lease.release(12)  # all of ring 0, the first 2 of ring 1
        assert ks[0].tail == ks[0].head and ks[1].tail == 2 * 32
        rest = c.read_batch(EV)
        assert rest["seq"].tolist() == list(range(2, 10)) and set(rest["ring"]) == {1}


def test_an_unreleased_lease_is_released_when_collected() -> None:
    ks, c = two_rings()
    with c:
        c.lease_batch(EV, limit=3)  # dropped at once
        gc.collect()
        assert ks[0].tail == ks[0].head - 7 * 32
        assert c.read_batch(EV)["seq"].tolist()[:7] == list(range(3, 10))


class LeaseModel(RuleBasedStateMachine):
    """Random production (samples of three sizes, LOST and other records, wrapping
    small rings) and random leases (released whole, in part, by a raising block, or
    dropped): each ring's delivered seqs are always a prefix of what it produced,
    and at the end all of it; LOST counts are exact."""

    def __init__(self) -> None:
        super().__init__()
        self.ks = [FakeKernel(256, start=2**32 - 72 + 8 * r) for r in range(2)]
        self.c = HandPerfConsumer(self.ks)
        self.produced: list[list[int]] = [[], []]
        self.delivered: list[list[int]] = [[], []]
        self.lost = [0, 0]
        self.seq = 0

    @rule(ring=st.integers(0, 1), n=st.integers(1, 6), size=st.sampled_from([16, 16, 8, 24]))
    def produce(self, ring: int, n: int, size: int) -> None:
        k = self.ks[ring]
        for _ in range(n):
            rec = k.sample_rec(payload(self.seq + 1, ring, size))
            if len(rec) > k.free():
                return
            self.seq += 1
            k.put(rec)
            self.produced[ring].append(self.seq)

    @rule(ring=st.integers(0, 1), count=st.integers(1, 9), other=st.booleans())
    def lost_or_other(self, ring: int, count: int, other: bool) -> None:
        k = self.ks[ring]
        rec = k.other_rec(7, 16) if other else k.lost_rec(count)
        if len(rec) <= k.free():
            k.put(rec)
            self.lost[ring] += 0 if other else count

    def _took(self, lease_arrays: list[np.ndarray], rings: list[int], n: int) -> None:
        for arr, ring in zip(lease_arrays, rings, strict=True):
            seqs = arr["seq"].tolist()[:n]
            n -= len(seqs)
            self.delivered[ring].extend(seqs)

    @rule(limit=st.one_of(st.none(), st.integers(1, 12)),
          how=st.sampled_from(["all", "part", "raise", "drop"]), frac=st.floats(0, 1))  # fmt: skip
    def lease(self, limit: int | None, how: str, frac: float) -> None:
        if how == "raise":
            with pytest.raises(KeyError), self.c.lease_batch(EV, limit) as lease:
                self._took(lease.arrays, lease.array_rings, len(lease))
                raise KeyError("the block fails")
        elif how == "all":
            with self.c.lease_batch(EV, limit) as lease:
                self._took(lease.arrays, lease.array_rings, len(lease))
        elif how == "part":
            lease = self.c.lease_batch(EV, limit)
            n = int(len(lease) * frac)
            self._took(lease.arrays, lease.array_rings, n)
            lease.release(n)
        else:
            lease = self.c.lease_batch(EV, limit)
            self._took(lease.arrays, lease.array_rings, len(lease))
            del lease  # released (all) when collected
            gc.collect()

    @invariant()
    def delivered_is_a_prefix_of_produced(self) -> None:
        for r in range(2):
            assert self.delivered[r] == self.produced[r][: len(self.delivered[r])]

    def teardown(self) -> None:
        try:
            with self.c.lease_batch(EV) as lease:
                self._took(lease.arrays, lease.array_rings, len(lease))
            assert self.delivered == self.produced
            assert [k.ring.lost_total for k in self.ks] == self.lost
            assert [k.tail for k in self.ks] == [k.head for k in self.ks]
        finally:
            self.c.close()


TestLeaseModel = LeaseModel.TestCase
TestLeaseModel.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)
