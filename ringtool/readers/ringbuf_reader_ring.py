"""One RINGBUF ring as a consumer :class:`~ringtool.readers.ring.Ring`: the reading
half of :class:`~ringtool.readers.ringbuf.RingbufMappedRing`, over a
:class:`~ringtool.protocol.ringbuf.RingbufRing` (tests drive it over hand-built
buffers). The perf side's counterpart is :mod:`ringtool.readers.perf_reader_ring`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ringtool.errors import ConsumerStateError
from ringtool.protocol.ringbuf import RingbufRing
from ringtool.readers.args import check_callable

#: A RINGBUF callback: the record's bytes (valid during the call only).
SampleCallback = Callable[[memoryview], Any]


class RingbufReaderRing:
    """The consumer ``Ring`` (see :mod:`ringtool.readers.consumer`) over a
    :class:`RingbufRing`: the walk of one RINGBUF whose memory someone else mapped.

    ``source[base + offset]`` reads data offset ``offset`` (copies are sliced from it);
    ``fd`` is what epoll watches. :class:`RingbufMappedRing` maps a real map; tests build
    one over a hand-made ring.
    """

    cpu: int | None = None

    def __init__(
        self,
        state: RingbufRing,
        source: Any,
        base: int,
        fd: int,
        callback: SampleCallback | None,
        index: int,
    ) -> None:
        check_callable("callback", callback)
        self.state = state
        self.index = index
        self._source = source
        self._base = base
        self._fd = fd
        self._callback = callback
        self._closed = False

    def _live(self) -> RingbufRing:
        if self._closed:
            raise ConsumerStateError(f"ring {self.index} is closed")
        return self.state

    # --- live state --------------------------------------------------------------------

    @property
    def consumer_pos(self) -> int:
        return self._live().consumer_pos

    @property
    def producer_pos(self) -> int:
        return self._live().producer_pos

    @property
    def avail_data_size(self) -> int:
        return self._live().avail_data_size

    @property
    def scribbles(self) -> int:
        """Times another writer changed the shared consumer_pos (see RingbufRing)."""
        return self.state.scribbles

    def take_over(self) -> None:
        self._live().take_over()

    # --- Ring protocol -----------------------------------------------------------------

    def fileno(self) -> int:
        return self._fd

    def drain(self, limit: int) -> tuple[int, int]:
        if self._callback is None:
            raise ConsumerStateError(f"ring {self.index} has no callback: use read()/lease()")
        return self._live().drain(self._callback, limit)

    def copy_pending(self, limit: int) -> tuple[list[bytes], int, int]:
        return self._live().copy_pending(self._source, self._base, limit)

    def copy_out(self, limit: int) -> list[bytes]:
        """Copy out and commit up to ``limit`` records (for ring-level readers such as
        :func:`ringtool.merge.ring_source`; don't mix with the consumer's styles)."""
        return self._live().copy_out(self._source, self._base, limit)

    def views(self, limit: int) -> tuple[list[memoryview], int, int]:
        state = self._live()
        start = state.consumer_pos
        views, end = state.views(limit)
        return views, start, end

    def position_after(self, start: int, n: int) -> int:
        return self._live().position_after(start, n)

    def advance(self, pos: int) -> None:
        self._live().advance(pos)  # release: pairs with the producer's acquire

    def read_batch(self, dtype: np.dtype[Any], limit: int) -> np.ndarray[Any, Any]:
        return self._live().decode_batch(dtype, limit)

    def view_batch(
        self, dtype: np.dtype[Any], limit: int
    ) -> tuple[list[np.ndarray[Any, Any]], int, int, int]:
        """Uncommitted arrays of up to ``limit`` records (views where the size is the
        dtype's, see :meth:`RingbufRing.batch`): ``(arrays, start, end, records)``."""
        state = self._live()
        start = state.consumer_pos
        arrays, end, n = state.batch(dtype, limit, copy=False, commit=False)
        return arrays, start, end, n

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.state.release()


__all__ = ["RingbufReaderRing", "SampleCallback"]
