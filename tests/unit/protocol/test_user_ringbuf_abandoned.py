"""A producer killed between reserve and submit leaves a BUSY record, at which the
kernel's drain stops for good; the next producer discards it
(``UserRingProducer.discard_abandoned``) and nothing submitted is lost -- on plain
memory, against the model of the kernel's consumer."""

from __future__ import annotations

import errno

from hypothesis import given
from hypothesis import strategies as st

from ringtool.protocol.ringbuf import BUSY_BIT, DISCARD_BIT
from ringtool.protocol.user_ringbuf import Abandoned
from tests.helpers.builders.user_ringbuf import HandUserRing


def test_a_busy_record_of_a_dead_producer_is_discarded_by_the_next() -> None:
    ring = HandUserRing(4096)
    try:
        dead = ring.successor(owner=4242)
        pos = dead.reserve(10)
        dead.payload(pos, 4)[:] = b"half"
        dead.release()  # killed before commit
        nxt = ring.successor(owner=7)
        assert nxt.write_batch([b"after"]) == 1
        assert ring.drain() == ([], 0)  # what the kernel does: stuck at the BUSY header
        assert ring.header(pos) == 10 | BUSY_BIT
        assert nxt.discard_abandoned() == [Abandoned(pos, 10, 4242)]
        assert ring.header(pos) == 10 | DISCARD_BIT
        assert ring.drain() == ([b"after"], 1)
        assert ring.consumer_pos == ring.producer_pos
        assert nxt.discard_abandoned() == []  # nothing left to discard
        nxt.release()
    finally:
        ring.close()


def test_the_walk_stops_at_a_header_that_cannot_be_a_record() -> None:
    ring = HandUserRing(4096)
    try:
        p = ring.successor(owner=1)
        pos = p.reserve(8)
        ring.poke_header(pos, 4000 | BUSY_BIT)  # span past producer_pos
        assert p.discard_abandoned() == []
        assert ring.header(pos) == 4000 | BUSY_BIT  # left alone: the kernel says EINVAL
        assert ring.drain() == ([], -errno.EINVAL)
        p.release()
    finally:
        ring.close()


# each step is one process: it writes a record whole, or reserves one and is killed
steps = st.lists(
    st.tuples(st.sampled_from(["write", "killed", "drain"]), st.binary(max_size=64)),
    max_size=24,
)


@given(steps=steps, start=st.integers(0, 2**20).map(lambda v: v * 8))
def test_every_whole_record_is_drained_in_order_whatever_was_killed(
    steps: list[tuple[str, bytes]], start: int
) -> None:
    ring = HandUserRing(4096, start_pos=start)
    try:
        written: list[bytes] = []
        drained: list[bytes] = []
        killed: list[int] = []
        for pid, (what, data) in enumerate(steps, 1):
            if what == "drain":
                drained += ring.drain()[0]
                continue
            p = ring.successor(owner=pid)
            found = p.discard_abandoned()  # what the next `mark` does under the lock
            assert [a.owner for a in found] == killed
            killed = []
            if what == "write":
                assert p.write_batch([data]) == 1
                written.append(data)
            else:
                pos = p.reserve(len(data))
                p.payload(pos, len(data))[: len(data) // 2] = data[: len(data) // 2]
                killed.append(pid)
            p.release()
        last = ring.successor(owner=0)
        assert [a.owner for a in last.discard_abandoned()] == killed
        last.release()
        drained += ring.drain()[0]
        assert drained == written
        assert ring.consumer_pos == ring.producer_pos
    finally:
        ring.close()
