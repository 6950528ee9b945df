"""The :class:`Ring` protocol: one shared ring as a consumer sees it.

:class:`ringtool.readers.ringbuf.RingbufReaderRing` (BPF ring buffers) and
:class:`ringtool.readers.perfbuf.PerfMappedRing` (perf CPU buffers) implement it;
:class:`ringtool.readers.consumer.MultiRingConsumer` drives any number of them.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np


class Ring(Protocol):
    """One shared ring as a consumer sees it (a BPF ring buffer, or one perf CPU buffer).

    Positions are the ring's free-running byte positions. Only :meth:`drain`,
    :meth:`read_batch` and :meth:`advance` commit; the others leave the ring as it is.
    """

    index: int
    cpu: int | None

    def fileno(self) -> int:
        """The fd that epoll reports readable when this ring has data."""
        ...

    @property
    def scribbles(self) -> int:
        """Times the shared position held a value this consumer had not stored
        (each raised :class:`ringtool.errors.ConsumerPositionError` once)."""
        ...

    def take_over(self) -> None:
        """Adopt the shared position as this consumer's own (a deliberate hand-over)."""
        ...

    def drain(self, limit: int) -> tuple[int, int]:
        """Deliver up to ``limit`` records to this ring's callback; commit once.

        Returns ``(records delivered, stop)``, ``stop`` being the callback's negative
        return value that ended the drain, else 0.
        """
        ...

    def copy_pending(self, limit: int) -> tuple[list[bytes], int, int]:
        """Copies of up to ``limit`` records' bytes, the position they start from and
        the position after them. Commits nothing."""
        ...

    def views(self, limit: int) -> tuple[list[memoryview], int, int]:
        """Views of up to ``limit`` records, start and end positions. Commits nothing."""
        ...

    def view_batch(
        self, dtype: np.dtype[Any], limit: int
    ) -> tuple[list[np.ndarray[Any, Any]], int, int, int]:
        """Up to ``limit`` records as ``dtype`` arrays (views of the ring where the
        layout allows, else copies), start and end positions, records. Commits
        nothing."""
        ...

    def position_after(self, start: int, n: int) -> int:
        """The position just past the first ``n`` records delivered from ``start``."""
        ...

    def advance(self, pos: int) -> None:
        """Commit ``pos`` (release store) if it is ahead of the ring's position."""
        ...

    def overwritten_since(self, start: int, n: int) -> int:
        """How many of the first ``n`` records handed out from ``start`` the producer has
        overwritten by now (a RINGBUF in overwrite mode; else 0)."""
        ...

    def count_overwritten(self, n: int) -> None:
        """Count ``n`` leased records found overwritten (never delivered)."""
        ...

    def read_batch(self, dtype: np.dtype[Any], limit: int) -> np.ndarray[Any, Any]:
        """Up to ``limit`` records decoded as ``dtype`` (vectorised), committed."""
        ...

    def close(self) -> None:
        """Stop reading this ring; later calls on it raise ConsumerStateError."""
        ...
