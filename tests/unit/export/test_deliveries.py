"""The collector's sequence sets and what its consumer delivered, on hand-built
deliveries: holes placed in the stream, skipped stream sequences, read elsewhere."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ringtool.export.deliveries import Deliveries
from ringtool.export.seqset import SeqSet

ranges = st.lists(st.tuples(st.integers(1, 200), st.integers(0, 20)), max_size=30)


@given(ranges, st.integers(1, 230), st.integers(0, 40))
def test_seqset_counts_like_a_set(adds: list[tuple[int, int]], lo: int, width: int) -> None:
    s, ref = SeqSet(), set[int]()
    for first, n in adds:
        s.add(first, first + n, at=first)
        ref |= set(range(first, first + n + 1))
    assert s.total == len(ref)
    assert s.count_in(lo, lo + width) == len(ref & set(range(lo, lo + width + 1)))
    missing = set(range(1, max(ref, default=0))) - ref
    assert sum(n for n, _, _ in s.holes()) == len(missing) == s.gaps


def test_holes_say_where_their_ends_were_seen() -> None:
    s = SeqSet()
    s.add(11, 20, at=7)
    s.add(31, 40, at=9)
    s.add(21, 25, at=8)
    assert list(s.holes()) == [(10, 0, 7), (5, 8, 9)]


def test_consecutive_deliveries_skip_deleted_messages() -> None:
    d = Deliveries()
    d.bind(consumer_seq=0, stream_seq=0)
    for cseq, sseq in [(1, 1), (2, 2), (3, 6), (4, 7)]:  # 3..5 deleted
        assert d.take(cseq, sseq, new=True)
    assert d.skipped.iv == [[3, 5, 0, 0]]
    assert not d.elsewhere(2, 6)  # a lane hole there is lost: a gap
    assert not d.take(4, 7, new=False)  # delivered again: already here


def test_what_others_read_is_elsewhere() -> None:
    d = Deliveries()
    d.bind(consumer_seq=10, stream_seq=10)  # a first reader had 1..10
    assert d.take(11, 11, new=True) and d.take(12, 12, new=True)
    assert d.take(20, 20, new=True)  # 13..19 went to another reader at the same time
    assert d.elsewhere(0, 11) and d.elsewhere(12, 20)
    assert d.skipped.iv == []
    assert not d.elsewhere(11, 12)


def test_a_redelivery_between_hides_the_high_mark() -> None:
    d = Deliveries()
    d.bind(consumer_seq=5, stream_seq=5)
    d.take(7, 3, new=False)  # consumer seq 6 went elsewhere; stream 3 again
    d.take(8, 9, new=True)  # 6..8 may be the other's: not skipped
    assert d.skipped.iv == [] and d.elsewhere(5, 9)


def test_a_consumer_that_delivered_nothing_gave_nothing_away() -> None:
    d = Deliveries()
    d.bind(consumer_seq=0, stream_seq=40)  # starts at 41: the stream's limits removed 1..40
    assert d.take(1, 41, new=True)
    assert d.skipped.iv == [[1, 40, 0, 0]]
    assert not d.elsewhere(0, 41)  # a lane's numbers below: lost with 1..40, gaps
