"""The batch a ``read()`` generator has copied out of its rings but not committed.

``read()`` copies up to ``READ_CHUNK`` records per batch *without* committing them,
yields them one by one, and commits each ring's part once it has all been yielded
(one commit per ring per batch, as before). What makes an early exit safe is that the
ring position always covers exactly the records yielded:

* the generator yields from a plain list iterator (``it``), so how many records it has
  handed out is ``len(records) - len(rest of it)``, at no cost per record;
* :meth:`Checkout.settle` (run under the consumer lock by the generator's ``finally``
  -- break, an exception in the loop body, ``close()``, garbage collection -- or by
  any other consuming call on the same consumer while the generator is suspended)
  takes the rest of the iterator in one ``list(it)``, which runs in C under the GIL:
  the generator can hand out no further record of this batch, even from another
  thread. It then commits the position just past the last record handed out and
  marks the batch stale: the records not yet handed out stay in the ring and the next
  reader gets them; the generator drops its stale copies and copies afresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol


class PendingRing(Protocol):
    """What a checkout needs of a ring: its identity, where a delivered prefix ends,
    and the commit (see :class:`ringtool.readers.ring.Ring`)."""

    index: int
    cpu: int | None

    def position_after(self, start: int, n: int) -> int: ...

    def advance(self, pos: int) -> None: ...


#: One ring's part of a batch: (ring, start position, end position, payloads).
CopiedRuns = tuple[PendingRing, int, int, list[bytes]]


class Checkout:
    """One ``read()`` batch. Every method is called with the consumer lock held.

    ``ring`` and ``it`` are the ring and iterator of the part being yielded now.
    """

    __slots__ = ("_cur", "_datas", "_end", "_groups", "_start", "it", "ring", "stale")

    def __init__(self, groups: list[CopiedRuns]) -> None:
        self._groups = groups
        self._cur = -1
        self.stale = False
        self.ring: PendingRing
        self.it: Iterator[bytes] = iter(())
        self._datas: list[bytes] = []
        self._start = self._end = 0
        self._next()

    def _next(self) -> bool:
        self._cur += 1
        if self._cur >= len(self._groups):
            self.stale = True  # done: nothing left to settle
            return False
        self.ring, self._start, self._end, self._datas = self._groups[self._cur]
        self.it = iter(self._datas)
        return True

    def next_group(self) -> bool:
        """The current part has been yielded whole: commit it and start the next.
        False when the batch is finished or was settled by someone else."""
        if self.stale:
            return False
        self.ring.advance(self._end)
        return self._next()

    def settle(self) -> None:
        """Commit exactly the records handed out so far and stop the batch (idempotent).

        Later parts of the batch are not committed: their records stay in the rings.
        """
        if self.stale:
            return
        self.stale = True
        rest = list(self.it)  # atomic under the GIL: the generator can take no more
        if rest:
            taken = len(self._datas) - len(rest)
            self.ring.advance(self.ring.position_after(self._start, taken))
        else:
            self.ring.advance(self._end)


__all__ = ["Checkout", "CopiedRuns", "PendingRing"]
