"""Reading the trace's per-CPU rings in timestamp order (``trace --ordered``)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ringtool.merge import merge_sources, u64_at
from ringtool.readers.ringbuf import RingBuffer
from ringtool.readers.ringbuf_group import merge_rings
from ringtool.readers.ringbuf_resize import BufferSource, RingResizer


class OrderedReader:
    """Reads the per-CPU rings merged by ``h.ts`` (offset 0 of every record) with
    :func:`ringtool.readers.ringbuf_group.merge_rings`; with ``window_us`` a reorder
    window holds events that long (released by the monotonic clock, which is
    ``bpf_ktime_get_ns``'s).

    With ``resizer`` (rings that grow) each CPU's ring is read through a
    :class:`~ringtool.readers.ringbuf_resize.BufferSource`, which follows the switches
    and takes a new ring's records only while the old ring is empty: a CPU's events
    stay in order across a switch."""

    def __init__(
        self,
        rb: RingBuffer,
        dtype: np.dtype[Any],
        window_us: float | None,
        resizer: RingResizer | None = None,
    ) -> None:
        self.dtype = dtype
        self.window = window_us is not None
        if resizer is None:
            rings = [rb.ring(i) for i in range(rb.ring_cnt)]
            self.merger: Any = merge_rings(rings, u64_at(0), window_us=window_us)
        else:
            sources = [BufferSource(resizer, i, u64_at(0)) for i in range(rb.ring_cnt)]
            self.merger = merge_sources(sources, window_us=window_us)

    def read(self, limit: int = 65536, *, final: bool = False) -> np.ndarray[Any, Any]:
        """The next records in timestamp order (at most ``limit``, all at ``final``)."""
        if self.window:
            self.merger.advance(time.monotonic_ns())
        items = self.merger.take(limit)
        if final and self.window:
            items.extend(self.merger.flush())
        if not items:
            return np.empty(0, dtype=self.dtype)
        return np.frombuffer(b"".join(p for _, p in items), dtype=self.dtype)


__all__ = ["OrderedReader"]
