"""The KMES reader over REAL sealed memfds while a consumer scribbles the shared metadata
page (docs/kmes.md §3.5, §7.4): the reader raises nothing but ``ringtool.errors``, each
drain is bounded, it never hands out an event the writer did not write (compared with
the writer's own list), never one twice, counts what it skipped in ``inconsistent``, and
catches up once the writer stores its own positions again.

On the code before the fix a scribbled write_pos/tail_pos made the reader hand out
events re-read from stale positions or raise ``struct.error``/``ValueError``."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import RingtoolError
from ringtool.kmes import layout as L
from ringtool.kmes.buffer import KmesBuffer
from ringtool.kmes.reader import Reader
from ringtool.kmes.writer import Writer
from tests.helpers.kmes import payload_for

CAP = 8192


class Harness:
    def __init__(self, rnd: random.Random) -> None:
        self.rnd = rnd
        self.buf = KmesBuffer(0, CAP)
        self.w = Writer(self.buf)
        self.written: dict[int, tuple[int, bytes]] = {}  # seq -> (event_type, payload)
        self.r = Reader(*self.buf.consumer_fds(), reattach=self.reattach)
        self.got: list[L.Event] = []

    def reattach(self, cpu: int) -> tuple[int, int, int]:
        return (*self.buf.consumer_fds(), self.buf.private_generation)

    def write(self, n: int, plen: int | None = None) -> None:
        for _ in range(n):
            n_bytes = self.rnd.choice((0, 8, 24, 100, 700)) if plen is None else plen
            seq = self.w.last_seq + 1
            etype = self.rnd.randint(1, 5)
            self.w.write(etype, payload_for(seq, n_bytes))
            self.written[seq] = (etype, payload_for(seq, n_bytes))

    def scribble(self, where: int, data: bytes) -> None:
        self.buf.meta[where : where + len(data)] = data  # what any consumer can do

    def drain(self, rounds: int = 8) -> None:
        for _ in range(rounds):  # bounded: each drain() is bounded work
            try:
                evs = self.r.drain()
            except RingtoolError:
                return
            self.got.extend(evs)
            if not evs:
                return

    def check(self) -> None:
        seqs = [e.seq for e in self.got]
        assert seqs == sorted(set(seqs)), "an event handed out twice or out of order"
        for e in self.got:
            assert e.seq in self.written, f"seq {e.seq} was never written"
            assert (e.event_type, e.payload) == self.written[e.seq], f"forged event {e}"
            assert e.cpu_id == 0 and e.flags == 0

    def close(self) -> None:
        self.r.close()
        self.buf.close()


@pytest.fixture
def harness() -> Iterator[Harness]:
    h = Harness(random.Random(7))
    yield h
    h.close()


scribble = st.one_of(
    # a word-aligned u64 anywhere in cache lines 0-2 (positions, generation, futex)
    st.tuples(st.sampled_from([32, 64, 72, 128]), st.integers(0, (1 << 64) - 1).map(
        lambda v: v.to_bytes(8, "little"))),
    # small plausible positions (aligned or not) into write_pos / tail_pos
    st.tuples(st.sampled_from([64, 72]), st.integers(0, 4 * CAP).map(
        lambda v: v.to_bytes(8, "little"))),
    # random bytes over any part of the first 192 bytes
    st.integers(0, 191).flatmap(
        lambda o: st.tuples(st.just(o), st.binary(min_size=1, max_size=192 - o))),
)  # fmt: skip
ops = st.lists(
    st.one_of(
        st.tuples(st.just("write"), st.integers(1, 40)),
        st.tuples(st.just("scribble"), scribble),
        st.tuples(st.just("drain"), st.just(0)),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops, seed=st.integers(0, 1 << 30))
def test_scribbled_metadata_never_forges_and_recovers(
    ops: list[tuple[str, object]], seed: int
) -> None:
    h = Harness(random.Random(seed))
    try:
        for op, arg in ops:
            if op == "write":
                assert isinstance(arg, int)
                h.write(arg)
            elif op == "scribble":
                assert isinstance(arg, tuple)
                h.scribble(int(arg[0]), bytes(arg[1]))
            else:
                h.drain()
            h.check()
        # The writer stores its private positions with its next event: the reader
        # catches up and hands out that event (liveness after scribbling).
        h.write(1)
        for _ in range(4):
            h.drain(64)
        h.check()
        assert h.got and h.got[-1].seq == h.w.last_seq, (h.r.stats, h.r.read_pos)
    finally:
        h.close()


def test_write_pos_scribbled_far_ahead_is_counted_not_delivered(harness: Harness) -> None:
    h = harness
    h.write(30, 24)
    h.drain()
    n = len(h.got)
    assert n == 30
    # Past the real write_pos lies stale or never-written data: nothing from there.
    h.scribble(L.OFF_WRITE_POS, (h.w.write_pos + 2048).to_bytes(8, "little"))
    h.drain()
    counted = h.r.stats.inconsistent
    assert len(h.got) == n and counted >= 1
    h.drain()
    assert h.r.stats.inconsistent == counted  # once per snapshot, not once per call
    h.write(3, 24)
    h.drain()
    h.check()
    assert [e.seq for e in h.got[n:]] == [31, 32, 33]
    assert h.r.stats.lapped_events == 0 and h.r.stats.gap_events == 0


def test_tail_scribbled_into_a_payload_is_not_an_event(harness: Harness) -> None:
    h = harness
    h.write(5, 24)
    # tail_pos pointing 8 bytes into the first event: a lap to a position that is no
    # event boundary. Nothing delivered from there; after the writer's next store,
    # everything arrives once.
    h.scribble(L.OFF_TAIL_POS, (8).to_bytes(8, "little"))
    h.drain()
    assert h.got == [] and h.r.stats.inconsistent >= 1
    h.write(1, 24)
    h.drain()
    h.check()
    assert [e.seq for e in h.got] == [1, 2, 3, 4, 5, 6]


def test_misaligned_and_reversed_positions_are_inconsistent(harness: Harness) -> None:
    h = harness
    h.write(4, 24)
    h.drain()
    for wp, tail in ((h.w.write_pos + 3, 0), (0, h.w.write_pos), (CAP * 4, 0)):
        h.scribble(L.OFF_WRITE_POS, wp.to_bytes(8, "little") + tail.to_bytes(8, "little"))
        assert h.r.drain() == []
    assert h.r.stats.inconsistent == 3
    h.write(1)
    h.drain()
    h.check()
    assert [e.seq for e in h.got] == [1, 2, 3, 4, 5]
