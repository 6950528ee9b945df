"""The consumer's delivery guarantee on hand-built rings: nothing lost, nothing
duplicated, order kept -- whatever mix of styles and early exits the caller uses.

A :class:`MultiRingConsumer` reads two hand-built RINGBUF rings (the real protocol and
reader code; only the kernel producer is played by ``HandRing``). Hypothesis drives
production, callbacks, ``read()`` generators left by break / exception / close() /
garbage collection or kept suspended and resumed later, leases released whole or in
part, and numpy batches. At every step each ring's delivered records must be a prefix
of what it produced (in order, no gap, no repeat); at the end, all of it.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Generator

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ringtool.errors import ArgumentError, BufferIndexError, ConsumerStateError
from ringtool.readers.record import Record
from tests.helpers.builders.ringbuf import HandConsumer, HandRing

RINGS = 2


class Caller(Exception):
    """An exception raised by the caller's own loop body."""


def _key(rec: bytes) -> tuple[int, int]:
    ring, seq = struct.unpack_from("<II", rec)
    return ring, seq


class ConsumerModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.rings = [HandRing(512, start_pos=2**32 - 256) for _ in range(RINGS)]
        self.produced: list[list[int]] = [[] for _ in range(RINGS)]
        self.delivered: list[list[int]] = [[] for _ in range(RINGS)]
        self.seq = 0
        self.c = HandConsumer(self.rings, lambda v: self._got(bytes(v)))
        self.suspended: list[Generator[Record, None, None]] = []

    def _got(self, rec: bytes) -> None:
        ring, seq = _key(rec)
        self.delivered[ring].append(seq)

    @rule(ring=st.integers(0, RINGS - 1), n=st.integers(1, 12), extra=st.integers(0, 20),
          discard=st.booleans())  # fmt: skip
    def produce(self, ring: int, n: int, extra: int, discard: bool) -> None:
        hand = self.rings[ring]
        for _ in range(n):
            self.seq += 1
            pos = hand.reserve(struct.pack("<II", ring, self.seq) + b"p" * extra)
            if pos is None:
                return  # full: the producer would count a drop
            drop = discard and self.seq % 3 == 0
            hand.commit(pos, discard=drop)
            if not drop:
                self.produced[ring].append(self.seq)

    def _take(self, it: Generator[Record, None, None], k: int) -> None:
        for _ in range(k):
            try:
                rec = next(it)
            except StopIteration:
                return
            self._got(rec.data)

    @rule(k=st.integers(0, 30), how=st.sampled_from(["break", "close", "gc", "raise", "keep"]))
    def read_some(self, k: int, how: str) -> None:
        it = self.c.read(timeout_ms=0)
        if how == "raise":
            with pytest.raises(Caller):
                for rec in it:
                    self._got(rec.data)
                    if len(self.delivered[0]) + len(self.delivered[1]) >= k:
                        raise Caller
                raise Caller
            return
        self._take(it, k)
        if how == "close":
            it.close()
        elif how == "keep" and len(self.suspended) < 3:
            self.suspended.append(it)
        del it
        gc.collect() if how == "gc" else None

    @precondition(lambda self: self.suspended)
    @rule(i=st.integers(0, 2), k=st.integers(0, 30), drop=st.booleans())
    def resume(self, i: int, k: int, drop: bool) -> None:
        it = self.suspended[i % len(self.suspended)]
        self._take(it, k)
        if drop:
            self.suspended.remove(it)

    @rule(k=st.integers(0, 30))
    def consume_n(self, k: int) -> None:
        self.c.consume_n(k)

    @rule(k=st.integers(0, 30), keep=st.integers(0, 40), raise_=st.booleans())
    def lease(self, k: int, keep: int, raise_: bool) -> None:
        lease = self.c.lease(k)
        views = [bytes(v) for v in lease]
        if raise_:
            with pytest.raises(Caller), lease:
                raise Caller  # a with block that raises commits every view
            keep = len(views)
        else:
            keep = min(keep, len(views))
            lease.release(keep)
        for rec in views[:keep]:
            self._got(rec)

    @rule(k=st.integers(0, 30))
    def batch(self, k: int) -> None:
        for row in self.c.read_batch(np.dtype("V8"), k):
            self._got(bytes(row))

    @invariant()
    def delivered_is_a_prefix_of_produced(self) -> None:
        for ring in range(RINGS):
            got = self.delivered[ring]
            assert got == self.produced[ring][: len(got)], ring

    def teardown(self) -> None:
        try:
            self.c.consume()
            assert self.delivered == self.produced
        finally:
            self.suspended.clear()
            self.c.close()


TestConsumerModel = ConsumerModel.TestCase
TestConsumerModel.settings = settings(max_examples=100, stateful_step_count=30, deadline=None)


def test_misuse_is_refused_with_ringtool_errors() -> None:
    hand = HandRing(512)
    hand.output(b"12345678")
    inside: list[BaseException] = []

    def cb(v: memoryview) -> None:
        for call in (c.consume, lambda: next(c.read(0)), c.lease, lambda: c.read_batch("V8")):
            try:
                call()
            except ConsumerStateError as exc:
                inside.append(exc)

    c = HandConsumer([hand], cb)
    try:
        assert c.consume() == 1 and len(inside) == 4  # re-entry from a callback
        hand.output(b"abcdefgh")
        with c.lease() as lease:
            assert len(lease) == 1
            with pytest.raises(ConsumerStateError, match="lease is out"):
                c.consume()
        for bad in (-1, 1.5, "3", True):
            with pytest.raises(ArgumentError):
                c.consume_n(bad)  # type: ignore[arg-type]
            with pytest.raises(ArgumentError):
                c.lease(bad)  # type: ignore[arg-type]
        for dtype in ("no such dtype", object, np.dtype([]), "(4,)u1"):
            with pytest.raises(ArgumentError):
                c.read_batch(dtype)
        for timeout in (float("nan"), "1", None):
            with pytest.raises(ArgumentError):
                c.poll(timeout)  # type: ignore[arg-type]
        with pytest.raises(ArgumentError):
            lease = c.lease()
            try:
                lease.release(5)  # more than it holds
            finally:
                lease.release()
    finally:
        c.close()
    for call in (c.consume, c.lease, lambda: c.read(0), lambda: c.read_batch("V8")):
        with pytest.raises(ConsumerStateError, match="closed"):
            call()
    with pytest.raises(ConsumerStateError, match="closed"):
        _ = c._rings[0].consumer_pos  # type: ignore[attr-defined]
    assert issubclass(BufferIndexError, IndexError)


def test_threads_reading_one_consumer_share_every_record_once() -> None:
    """Three threads -- two read() loops leaving early at random, one consume_n --
    on one consumer while the GIL switches as often as it can: every record is
    delivered once, and each thread sees each ring's records in ring order."""
    import random
    import sys
    import threading

    rings = [HandRing(1 << 16) for _ in range(RINGS)]
    per_ring = 1500
    for seq in range(per_ring):
        for ring, hand in enumerate(rings):
            assert hand.output(struct.pack("<II", ring, seq) + b"x" * (seq % 17))
    seen: dict[str, list[tuple[int, int]]] = {"a": [], "b": [], "c": []}
    c = HandConsumer(rings, lambda v: seen["c"].append(_key(bytes(v))))
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader(name: str, seed: int) -> None:
        rng = random.Random(seed)
        try:
            while not stop.is_set():
                it = c.read(timeout_ms=0)
                for i, rec in enumerate(it):
                    seen[name].append(_key(rec.data))
                    if i >= rng.randrange(1, 300):
                        break
                del it
        except BaseException as exc:
            errors.append(exc)

    def consumer() -> None:
        rng = random.Random(3)
        try:
            while not stop.is_set():
                c.consume_n(rng.randrange(0, 50))
        except BaseException as exc:
            errors.append(exc)

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    threads = [
        threading.Thread(target=reader, args=("a", 1)),
        threading.Thread(target=reader, args=("b", 2)),
        threading.Thread(target=consumer),
    ]
    try:
        for t in threads:
            t.start()
        while sum(len(v) for v in seen.values()) < RINGS * per_ring and not errors:
            stop.wait(0.01)
    finally:
        stop.set()
        for t in threads:
            t.join()
        sys.setswitchinterval(old)
        c.close()
    assert not errors, errors
    everything = [k for v in seen.values() for k in v]
    assert sorted(everything) == sorted((r, s) for r in range(RINGS) for s in range(per_ring))
    for got in seen.values():
        for ring in range(RINGS):
            mine = [s for r, s in got if r == ring]
            assert mine == sorted(mine)
