"""``RingBuffer``: ringtool's own consumer of BPF_MAP_TYPE_RINGBUF maps.

Each map is mapped by ringtool itself (libbpf's layout): the consumer page read-write
at offset 0, and the producer page followed by the data pages *twice* read-only at
offset one page (the kernel double-maps the data, so a wrapped record is contiguous).
Records are walked by :mod:`ringtool.protocol.ringbuf`; neither BCC's nor libbpf's
reader is used.

Callback contract: ``callback(data)`` receives a ``memoryview`` into the shared ring,
valid only during the call (it is released afterwards; copy with ``bytes(data)`` to
keep it). Return None or 0 to go on; a negative int stops consumption at once and
``poll()``/``consume()`` return it (that record counts as consumed, as in libbpf).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ringtool.errors import (
    BufferIndexError,
    ConsumerStateError,
    MapTypeError,
    RingSizeError,
)
from ringtool.kernel import bpf
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.protocol.ringbuf import RingState
from ringtool.readers.args import check_callable, map_fd_of
from ringtool.readers.consumer import MultiRingConsumer

SampleCallback = Callable[[memoryview], Any]


@dataclass(frozen=True, slots=True)
class _MapRef:
    fd: int
    name: str
    drops_fd: int | None


def _resolve(map_: Any, drops: Any) -> _MapRef:
    """Accept a BCC table (``.map_fd``) or a raw map fd; find ``<name>_drops``."""
    fd = map_fd_of(map_)
    raw = getattr(map_, "_name", b"") or b""  # BCC tables know their name
    name = raw.decode() if isinstance(raw, bytes) else str(raw)
    drops_fd: int | None = None
    if drops is not None:
        drops_fd = map_fd_of(drops)
    elif name and hasattr(map_, "bpf"):
        try:
            drops_fd = int(map_.bpf.get_table(f"{name}_drops".encode()).map_fd)
        except Exception:
            drops_fd = None
    return _MapRef(fd=fd, name=name, drops_fd=drops_fd)


class StateRing:
    """The consumer ``Ring`` (see :mod:`ringtool.readers.consumer`) over a
    :class:`RingState`: the walk of one RINGBUF whose memory someone else mapped.

    ``source[base + offset]`` reads data offset ``offset`` (copies are sliced from it);
    ``fd`` is what epoll watches. :class:`MappedRing` maps a real map; tests build
    one over a hand-made ring.
    """

    cpu: int | None = None

    def __init__(
        self,
        state: RingState,
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

    def _live(self) -> RingState:
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
        """Times another writer changed the shared consumer_pos (see RingState)."""
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
        dtype's, see :meth:`RingState.batch`): ``(arrays, start, end, records)``."""
        state = self._live()
        start = state.consumer_pos
        arrays, end, n = state.batch(dtype, limit, copy=False, commit=False)
        return arrays, start, end, n

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.state.release()


class MappedRing(StateRing):
    """One RINGBUF map mapped into this process; implements the consumer ``Ring``.

    ``consumer_pos``, ``producer_pos``, ``avail_data_size`` and ``size`` read the live
    shared state. Views handed out stop being valid when the ring is closed.
    """

    def __init__(self, ref: _MapRef, callback: SampleCallback | None, index: int) -> None:
        info = bpf.map_info(ref.fd)
        if info.type != bpf.MapType.RINGBUF:
            raise MapTypeError(
                f"map {ref.name or ref.fd!r} is a {info.type_name} map, not RINGBUF: "
                "RingBuffer reads BPF_MAP_TYPE_RINGBUF maps (use PerfBuffer for "
                "PERF_EVENT_ARRAY)"
            )
        size = info.max_entries
        if size < PAGE_SIZE or size & (size - 1) or size % PAGE_SIZE:
            raise RingSizeError(
                f"ring {ref.name or ref.fd!r} has {size} bytes: a RINGBUF must be a power "
                f"of two of {PAGE_SIZE}-byte pages"
            )
        self.name = ref.name
        self.size = size
        self._drops_fd = ref.drops_fd
        self._cons_map = map_shared(
            ref.fd, PAGE_SIZE, offset=0, writable=True, what="consumer page"
        )
        try:
            self._prod_map = map_shared(
                ref.fd,
                PAGE_SIZE + 2 * size,
                offset=PAGE_SIZE,
                writable=False,
                what="producer page + data",
            )
        except BaseException:
            self._cons_map.close()
            raise
        prod_view = memoryview(self._prod_map)
        state = RingState(
            memoryview(self._cons_map)[:8],
            prod_view[:8],
            prod_view[PAGE_SIZE:],
            size,
            index=index,
        )
        prod_view.release()
        # data[0] is at offset PAGE_SIZE of _prod_map: copies slice the mmap directly
        super().__init__(state, self._prod_map, PAGE_SIZE, ref.fd, callback, index)

    def dropped(self) -> list[int] | None:
        """Failed reservations per CPU from the ring's ``<name>_drops`` per-CPU array
        (see bpf/ringtool_ringbuf.h), or None when the program declares none."""
        if self._drops_fd is None:
            return None
        return bpf.percpu_u64(self._drops_fd)

    def close(self) -> None:
        if self._closed:
            return
        super().close()
        for m in (self._prod_map, self._cons_map):
            try:
                m.close()
            except BufferError:  # a view is still exported (e.g. kept from a lease)
                pass


class RingBuffer(MultiRingConsumer):
    """Consume one or more BPF ring buffer maps with ringtool's own mmap reader.

    ``map`` is a BCC table (``bpf["events"]``) or a RINGBUF map fd (not closed by
    ringtool). ``drops`` is the ring's drop counter (a BCC table or per-CPU array fd);
    for a BCC table it is found by name (``<ring>_drops``) when not given.
    With ``auto_callback=True`` a background thread calls the callbacks as data
    arrives (the seed's RINGBUF_FLAG_AUTO_CALLBACK) and ``poll()`` is refused.
    """

    def __init__(
        self,
        map: Any,
        callback: SampleCallback | None = None,
        *,
        auto_callback: bool = False,
        drops: Any = None,
    ) -> None:
        super().__init__(auto_callback=auto_callback, what="RingBuffer")
        self._mapped: list[MappedRing] = []
        self.add(map, callback, drops=drops)

    def add(self, map: Any, callback: SampleCallback | None = None, *, drops: Any = None) -> int:
        """Add another ring; returns its index (rings are numbered in order added)."""
        self._check_open()
        check_callable("callback", callback)
        ring = MappedRing(_resolve(map, drops), callback, len(self._mapped))
        self._mapped.append(ring)
        self._add_ring(ring)
        return ring.index

    def ring(self, i: int) -> MappedRing:
        """Ring ``i`` (0 = the first map): positions, ``size``, ``dropped()``."""
        if not isinstance(i, int) or not 0 <= i < len(self._mapped):
            raise BufferIndexError(f"ring index {i!r} out of range (ring_cnt = {self.ring_cnt})")
        return self._mapped[i]

    @property
    def ring_cnt(self) -> int:
        return len(self._mapped)

    def dropped(self) -> list[int]:
        """Failed reservations per CPU, summed over the rings that count them."""
        total = [0] * possible_cpu_count()
        for ring in self._mapped:
            per_cpu = ring.dropped()
            if per_cpu:
                for cpu, n in enumerate(per_cpu):
                    total[cpu] += n
        return total


__all__ = ["MappedRing", "RingBuffer", "StateRing"]
