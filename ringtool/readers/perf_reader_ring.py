"""``PerfReaderRing``: one CPU's perf ring as a consumer :class:`~ringtool.readers.ring.Ring`
(the reading half of :class:`ringtool.readers.perfbuf.PerfMappedRing`, which adds the
perf event and the mapping; tests drive it over hand-built rings)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ringtool.errors import ConsumerStateError
from ringtool.protocol.perf import PerfRing

SampleCallback = Callable[[int, memoryview], Any]


class PerfReaderRing:
    """Reads ``ring`` (a :class:`PerfRing`) for a consumer; ``fd`` is what epoll
    watches for it, ``index`` its position among the consumer's rings, ``cpu`` the CPU
    it serves. ``overwrite``: a flight recorder, refused by every reading style."""

    def __init__(
        self,
        index: int,
        cpu: int,
        ring: PerfRing,
        fd: int,
        sample_cb: SampleCallback | None,
        *,
        overwrite: bool = False,
    ) -> None:
        self.index = index
        self.cpu: int | None = cpu  # always set for a perf buffer (Ring allows None)
        self.ring = ring
        self.fd = fd
        self.overwrite = overwrite
        self._sample_cb = sample_cb
        self._closed = False

    def fileno(self) -> int:
        """The perf event fd that epoll reports readable when this CPU's buffer has data."""
        return self.fd

    @property
    def scribbles(self) -> int:
        """Times the shared ``data_tail`` held a value this consumer had not stored (each
        raised ConsumerPositionError once)."""
        return self.ring.page.scribbles

    def take_over(self) -> None:
        """Adopt the shared ``data_tail`` as this consumer's own position (a deliberate hand-
        over). Raises ConsumerStateError for an overwrite buffer or a closed ring."""
        self._check_mode()
        self.ring.page.take_over()

    def _check_mode(self) -> None:
        if self._closed:
            raise ConsumerStateError(f"perf buffer of cpu {self.cpu} is closed")
        if self.overwrite:
            raise ConsumerStateError(
                "PerfBuffer(overwrite=True) is a flight recorder: read it with snapshot()"
            )

    def drain(self, limit: int) -> tuple[int, int]:
        """Deliver up to ``limit`` samples to ``sample_cb(cpu, data)`` (LOST records to the
        lost callback), committing ``data_tail`` once. Returns ``(samples
        delivered, stop)``, ``stop`` being a callback's negative return value,
        else 0. Raises ConsumerStateError without a sample callback or for an
        overwrite buffer."""
        self._check_mode()
        if self._sample_cb is None:
            raise ConsumerStateError("PerfBuffer has no sample_cb: use read()/lease()")
        return self.ring.drain(self._sample_cb, limit)

    def copy_pending(self, limit: int) -> tuple[list[bytes], int, int]:
        """Copies of up to ``limit`` samples, the position they start at and the one after
        them. Commits nothing."""
        self._check_mode()
        return self.ring.copy_pending(limit)

    def copy_out(self, limit: int) -> list[bytes]:
        """Copy out and commit up to ``limit`` samples (for ring-level readers such as
        :func:`ringtool.merge.ring_source`; don't mix with the consumer's styles)."""
        self._check_mode()
        return self.ring.copy_out(limit)

    def overwritten_since(self, start: int, n: int) -> int:
        """Leased samples the kernel overwrote: never (the reading styles refuse an
        overwrite buffer)."""
        return 0

    def count_overwritten(self, n: int) -> None:
        """Nothing to count (see :meth:`overwritten_since`)."""

    def views(self, limit: int) -> tuple[list[memoryview], int, int]:
        """Memoryviews of up to ``limit`` samples with their start and end positions; a
        sample that wraps the end of the ring is a copy. Commits nothing; a view
        is valid until the position after it is committed."""
        self._check_mode()
        return self.ring.views(limit)

    def view_batch(
        self, dtype: np.dtype[Any], limit: int
    ) -> tuple[list[np.ndarray[Any, Any]], int, int, int]:
        """Uncommitted arrays of up to ``limit`` samples, views of the data area where a
        run does not wrap it (:meth:`PerfRing.batch`): ``(arrays, start, end, n)``."""
        self._check_mode()
        return self.ring.batch(dtype, limit, copy=False)

    def position_after(self, start: int, n: int) -> int:
        """The position just past the first ``n`` records (samples, LOST and others) from
        ``start``."""
        return self.ring.position_after(start, n)

    def advance(self, pos: int) -> None:
        """Commit ``pos`` (a release store of ``data_tail``) if it is ahead of the current
        position."""
        self.ring.advance(pos)  # release store of data_tail (see protocol.perf)

    def read_batch(self, dtype: np.dtype[Any], limit: int) -> np.ndarray[Any, Any]:
        """Up to ``limit`` samples decoded as ``dtype`` into a new numpy array (a copy),
        committed before it is returned."""
        self._check_mode()
        return self.ring.read_batch(dtype, limit)

    def close(self) -> None:
        """Drop the ring's views (the owner of the memory and the fd frees them)."""
        if self._closed:
            return
        self._closed = True
        self.ring.release()


__all__ = ["PerfReaderRing", "SampleCallback"]
