"""Sets of sequence numbers as sorted disjoint intervals, for ``collect``'s accounting.

:class:`SeqSet` keeps numbers seen (a lane's event numbers, or stream sequences) as
``[first, last, at_first, at_last]`` intervals: ``at_*`` is where the interval's end
numbers were seen (the stream sequence of the message that held them; 0 when not
known), so a hole between two intervals can be placed in the stream
(:meth:`SeqSet.holes`). Adding counts numbers already present as ``duplicates``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator


class SeqSet:
    """Sequence numbers seen, as sorted disjoint intervals (module doc)."""

    __slots__ = ("duplicates", "iv", "total")

    def __init__(self) -> None:
        self.iv: list[list[int]] = []
        self.total = 0
        self.duplicates = 0

    def _start(self, first: int) -> int:
        """Index of the first interval that ends at ``first - 1`` or later."""
        i = bisect_left(self.iv, [first, first])
        if i and self.iv[i - 1][1] >= first - 1:
            i -= 1
        return i

    def add(self, first: int, last: int, at: int = 0) -> None:
        """Record ``first..last``, seen at ``at``; numbers already present count as
        duplicates."""
        iv = self.iv
        i = j = self._start(first)
        a, b, at_a, at_b, merged = first, last, at, at, 0
        while j < len(iv) and iv[j][0] <= b + 1:
            lo, hi, at_lo, at_hi = iv[j]
            self.duplicates += max(0, min(hi, last) - max(lo, first) + 1)
            merged += hi - lo + 1
            if lo < a:
                a, at_a = lo, at_lo
            if hi > b:
                b, at_b = hi, at_hi
            j += 1
        iv[i:j] = [[a, b, at_a, at_b]]
        self.total += (b - a + 1) - merged

    def count_in(self, first: int, last: int) -> int:
        """How many of ``first..last`` are present."""
        iv, n = self.iv, 0
        i = self._start(first) if first <= last else len(iv)
        while i < len(iv) and iv[i][0] <= last:
            n += max(0, min(iv[i][1], last) - max(iv[i][0], first) + 1)
            i += 1
        return n

    def holes(self) -> Iterator[tuple[int, int, int]]:
        """Each run of numbers missing below the highest: ``(count, after, before)``,
        where the numbers around it were seen (``after`` 0 for the numbers below the
        lowest: nothing was seen before them)."""
        prev_last, prev_at = 0, 0
        for lo, hi, at_lo, at_hi in self.iv:
            if lo > prev_last + 1:
                yield lo - prev_last - 1, prev_at, at_lo
            prev_last, prev_at = hi, at_hi

    @property
    def highest(self) -> int:
        return self.iv[-1][1] if self.iv else 0

    @property
    def gaps(self) -> int:
        """Numbers below the highest never seen."""
        return self.highest - self.total


__all__ = ["SeqSet"]
