"""Hypothesis state machine: any interleaving of reserve / commit / discard / consume
(in every consumer style) delivers each committed record exactly once, in reservation
order, never a discarded or busy one, and frees space for the producer."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from tests.helpers.builders.ringbuf import HandRing

DT = np.dtype([("seq", "<u8")])  # == the 8-byte payloads: the vectorised path


class RingModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.ring = HandRing(1024, start_pos=2**32 - 512)
        self.seq = 0
        # in reservation order: [pos, payload, state] with state busy/done/discarded
        self.reserved: list[list[object]] = []
        self.delivered: list[bytes] = []
        self.expected: list[bytes] = []  # what should have been delivered so far

    def _payload(self, extra: int) -> bytes:
        self.seq += 1
        return struct.pack("<Q", self.seq) + bytes([self.seq & 0xFF]) * extra

    @rule(extra=st.sampled_from([0, 0, 0, 1, 8, 13, 40]))
    def reserve(self, extra: int) -> None:
        payload = self._payload(extra)
        pos = self.ring.reserve(payload)
        if pos is not None:
            self.reserved.append([pos, payload, "busy"])

    @precondition(lambda self: any(r[2] == "busy" for r in self.reserved))
    @rule(data=st.data(), discard=st.booleans())
    def finish(self, data: st.DataObject, discard: bool) -> None:
        busy = [r for r in self.reserved if r[2] == "busy"]
        rec = data.draw(st.sampled_from(busy))
        self.ring.commit(int(rec[0]), discard=discard)  # type: ignore[call-overload]
        rec[2] = "discarded" if discard else "done"

    def _ready(self, limit: int) -> list[bytes]:
        """What the consumer may take now: finished records up to the first busy one."""
        out = []
        taken = 0
        while self.reserved and self.reserved[0][2] != "busy":
            _pos, payload, state = self.reserved[0]
            if state == "done":
                if taken == limit:
                    break
                out.append(payload)
                taken += 1
            self.reserved.pop(0)
        return out  # type: ignore[return-value]

    @rule(limit=st.integers(1, 50))
    def consume_callback(self, limit: int) -> None:
        self.expected += self._ready(limit)
        got: list[bytes] = []
        self.ring.state.drain(lambda v: got.append(bytes(v)), limit)
        self.delivered += got

    @rule(limit=st.integers(1, 50))
    def consume_copy(self, limit: int) -> None:
        self.expected += self._ready(limit)
        self.delivered += self.ring.state.copy_out(self.ring.state.data, 0, limit)

    @rule(limit=st.integers(1, 50))
    def consume_views(self, limit: int) -> None:
        self.expected += self._ready(limit)
        views, end = self.ring.state.views(limit)
        self.delivered += [bytes(v) for v in views]
        for v in views:
            v.release()
        self.ring.state.commit(end)

    @precondition(lambda self: all(len(r[1]) == 8 for r in self.reserved))
    @rule(limit=st.integers(1, 50))
    def consume_batch(self, limit: int) -> None:
        ready = self._ready(limit)
        self.expected += ready
        arr = self.ring.state.decode_batch(DT, limit)
        self.delivered += [struct.pack("<Q", int(s)) for s in arr["seq"]]

    @invariant()
    def delivered_equals_expected(self) -> None:
        assert self.delivered == self.expected
        seqs = [struct.unpack_from("<Q", p)[0] for p in self.delivered]
        assert seqs == sorted(set(seqs))  # in order, no duplicates

    @invariant()
    def consumer_never_passes_producer(self) -> None:
        assert self.ring.consumer_pos <= self.ring.producer_pos
        assert self.ring.producer_pos - self.ring.consumer_pos <= self.ring.size


TestRingModel = RingModel.TestCase
TestRingModel.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
