"""Every reading style of the consumer over a hand-built RINGBUF in overwrite mode: what
the producer overwrites while the reader holds it is never delivered and is counted."""

from __future__ import annotations

import struct
from collections.abc import Iterator

import numpy as np
import pytest

from ringtool.protocol.ringbuf import record_span
from tests.helpers.builders.ringbuf import HandConsumer
from tests.helpers.builders.ringbuf_overwrite import OverwriteHandRing

DT = np.dtype([("seq", "<u8"), ("fill", "u1", 24)])
SPAN = record_span(DT.itemsize)


def rec(seq: int) -> bytes:
    return struct.pack("<Q", seq) + bytes((seq * 31 + i) & 0xFF for i in range(24))


def seq_of(data: bytes | memoryview) -> int:
    assert bytes(data) == rec(struct.unpack_from("<Q", data)[0]), "torn record delivered"
    return int(struct.unpack_from("<Q", data)[0])


class Fixture:
    def __init__(self) -> None:
        self.ring = OverwriteHandRing(1024)  # 25 records of 40 bytes
        self.got: list[int] = []
        self.rb = HandConsumer([self.ring], lambda v: self.got.append(seq_of(v)))
        self.seq = 0

    def emit(self, n: int) -> None:
        for _ in range(n):
            assert self.ring.output(rec(self.seq))
            self.seq += 1

    def accounted(self) -> int:
        s = self.ring.state
        assert s.uncounted_bytes % SPAN == 0
        return len(self.got) + s.overwritten + s.uncounted_bytes // SPAN


@pytest.fixture
def fx() -> Iterator[Fixture]:
    f = Fixture()
    yield f
    f.rb.close()


def test_consume_after_laps_starts_at_overwrite_pos(fx: Fixture) -> None:
    fx.emit(100)
    fx.rb.consume()
    assert fx.got == list(range(100 - len(fx.got), 100))
    assert fx.accounted() == 100


def test_read_counts_what_was_lapped_while_it_held_a_batch(fx: Fixture) -> None:
    fx.emit(20)
    it = fx.rb.read(timeout_ms=0)
    for r in it:
        fx.got.append(seq_of(r.data))
        if len(fx.got) == 5:
            fx.emit(30)  # laps the whole batch: its copies were checked before
    assert fx.got[:20] == list(range(20)) and fx.got == sorted(set(fx.got))
    assert fx.accounted() == 50


def test_lease_given_back_in_part_is_counted_from_the_headers_it_saw(fx: Fixture) -> None:
    fx.emit(10)
    lease = fx.rb.lease()
    fx.got += [seq_of(v) for v in lease.views[:2]]
    lease.release(2)  # 8 given back: their headers were read (genuine)
    fx.emit(25)  # 35 records > 25: the 8 and 2 more are overwritten
    fx.rb.consume()
    assert fx.got == [0, 1, *range(10, 35)]
    assert fx.ring.state.overwritten == 8 and fx.accounted() == 35


def test_lease_says_which_views_were_overwritten(fx: Fixture) -> None:
    fx.emit(10)
    with fx.rb.lease() as lease:
        assert lease.overwritten() == []
        fx.emit(20)  # 1200 bytes in 1024 (a record may end 1023 past overwrite_pos): 5 gone
        lapped = lease.overwritten()
        assert lapped == [0, 1, 2, 3, 4]
        fx.got += [seq_of(v) for i, v in enumerate(lease.views) if i not in lapped]
    fx.rb.consume()
    assert fx.got == list(range(5, 30))
    assert fx.ring.state.overwritten == 5 and fx.accounted() == 30


def test_lease_batch_and_read_batch(fx: Fixture) -> None:
    fx.emit(10)
    with fx.rb.lease_batch(DT) as lease:
        fx.emit(20)
        lapped = set(lease.overwritten())
        rows = lease.array()
        fx.got += [int(s) for i, s in enumerate(rows["seq"]) if i not in lapped]
    fx.emit(5)
    fx.got += [int(s) for s in fx.rb.read_batch(DT)["seq"]]
    assert fx.got == list(range(5, 35))
    assert fx.accounted() == 35


def test_callback_gets_checked_copies(fx: Fixture) -> None:
    fx.emit(24)
    fx.rb.consume_n(3)
    fx.emit(40)
    fx.rb.consume()
    assert fx.got[:3] == [0, 1, 2] and fx.got == sorted(set(fx.got))
    assert fx.accounted() == 64
