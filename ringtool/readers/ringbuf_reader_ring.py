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

    @property
    def callback(self) -> SampleCallback | None:
        """The callback :meth:`drain` delivers to (None: the other styles only)."""
        return self._callback

    # --- live state --------------------------------------------------------------------

    @property
    def consumer_pos(self) -> int:
        """This consumer's own position (bytes, free-running): everything before it is
        committed. Raises ConsumerStateError once the ring is closed."""
        return self._live().consumer_pos

    @property
    def producer_pos(self) -> int:
        """The producer's position as the kernel last published it (an acquire load of the
        shared page); ``producer_pos - consumer_pos`` bytes are waiting."""
        return self._live().producer_pos

    @property
    def avail_data_size(self) -> int:
        """Bytes between this consumer's position and the producer's: records (with headers
        and padding) not consumed yet, including busy and discarded ones."""
        return self._live().avail_data_size

    @property
    def scribbles(self) -> int:
        """Times another writer changed the shared consumer_pos (see RingbufRing)."""
        return self.state.scribbles

    def take_over(self) -> None:
        """Adopt the shared ``consumer_pos`` as this consumer's own position (a deliberate
        hand-over from another consumer); otherwise a value it did not store is a
        ConsumerPositionError."""
        self._live().take_over()

    # --- Ring protocol -----------------------------------------------------------------

    def fileno(self) -> int:
        """The map fd that epoll reports readable when the ring has data (not closed by the
        ring)."""
        return self._fd

    def drain(self, limit: int) -> tuple[int, int]:
        """Deliver up to ``limit`` records to the callback, committing once at the end.
        Returns ``(records delivered, stop)``: ``stop`` is the negative value a
        callback returned to end the drain, else 0. Raises ConsumerStateError
        without a callback, CorruptRecordError at a bad header (the records before
        it are delivered first)."""
        if self._callback is None:
            raise ConsumerStateError(f"ring {self.index} has no callback: use read()/lease()")
        return self._live().drain(self._callback, limit)

    def copy_pending(self, limit: int) -> tuple[list[bytes], int, int]:
        """Copies (``bytes``) of up to ``limit`` ready records, the position they start at
        and the position after them. Commits nothing: :meth:`advance` does."""
        return self._live().copy_pending(self._source, self._base, limit)

    def copy_out(self, limit: int) -> list[bytes]:
        """Copy out and commit up to ``limit`` records (for ring-level readers such as
        :func:`ringtool.merge.ring_source`; don't mix with the consumer's styles)."""
        return self._live().copy_out(self._source, self._base, limit)

    def views(self, limit: int) -> tuple[list[memoryview], int, int]:
        """Zero-copy memoryviews of up to ``limit`` ready records, their start and end
        positions. Commits nothing. A view stays valid only until the position
        after it is committed: the producer may then overwrite its bytes."""
        state = self._live()
        views, end = state.views(limit)
        start = state.consumer_pos  # after: an overwrite ring commits what it skipped
        return views, start, end

    def position_after(self, start: int, n: int) -> int:
        """The position just past the first ``n`` records starting at ``start`` (headers and
        padding included), for committing part of what was handed out."""
        return self._live().position_after(start, n)

    def overwritten_since(self, start: int, n: int) -> int:
        """How many of the first ``n`` records handed out from ``start`` (a lease) the
        producer has overwritten by now: 0 unless the map is in overwrite mode
        (:mod:`ringtool.protocol.ringbuf_overwrite`)."""
        return self._live().overwritten_since(start, n)

    def count_overwritten(self, n: int) -> None:
        """Count ``n`` leased records found overwritten (never delivered)."""
        self._live().count_overwritten(n)

    def advance(self, pos: int) -> None:
        """Commit ``pos`` (a release store of ``consumer_pos``) if it is ahead of the current
        position; the producer may then reuse the space before it."""
        self._live().advance(pos)  # release: pairs with the producer's acquire

    def read_batch(self, dtype: np.dtype[Any], limit: int) -> np.ndarray[Any, Any]:
        """Up to ``limit`` ready records decoded as ``dtype`` into a new numpy array (a
        copy, safe to keep), committed before it is returned. A record longer than
        ``dtype.itemsize`` is decoded from its first bytes, a shorter one zero-filled;
        a corrupt header raises CorruptRecordError when it is the first record."""
        return self._live().decode_batch(dtype, limit)

    def view_batch(
        self, dtype: np.dtype[Any], limit: int
    ) -> tuple[list[np.ndarray[Any, Any]], int, int, int]:
        """Uncommitted arrays of up to ``limit`` records (views where the size is the
        dtype's, see :meth:`RingbufRing.batch`): ``(arrays, start, end, records)``."""
        state = self._live()
        arrays, end, n = state.batch(dtype, limit, copy=False, commit=False)
        start = state.consumer_pos  # after: an overwrite ring commits what it skipped
        return arrays, start, end, n

    def close(self) -> None:
        """Stop reading this ring: release its walk state. Idempotent; later calls raise
        ConsumerStateError. The memory and the fd are freed by their owner."""
        if self._closed:
            return
        self._closed = True
        self.state.release()


__all__ = ["RingbufReaderRing", "SampleCallback"]
