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

from dataclasses import dataclass
from typing import Any

from ringtool.errors import (
    BufferIndexError,
    MapTypeError,
    RingSizeError,
)
from ringtool.kernel import bpf
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.kernel.ringbuf_map import BPF_F_RB_OVERWRITE
from ringtool.protocol.ringbuf import RingbufRing
from ringtool.protocol.ringbuf_overwrite import OverwriteRingbufRing
from ringtool.readers.args import check_callable, map_fd_of
from ringtool.readers.consumer import MultiRingConsumer
from ringtool.readers.ringbuf_reader_ring import RingbufReaderRing, SampleCallback


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


class RingbufMappedRing(RingbufReaderRing):
    """One RINGBUF map mapped into this process; implements the consumer ``Ring``.

    ``consumer_pos``, ``producer_pos``, ``avail_data_size`` and ``size`` read the live
    shared state. A map created with ``BPF_F_RB_OVERWRITE`` (read from its
    ``map_flags``) is walked by :class:`OverwriteRingbufRing` (``overwrite`` is True).
    Views handed out stop being valid when the ring is closed.
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
        #: the map was created with BPF_F_RB_OVERWRITE (see ringtool.protocol.ringbuf_overwrite)
        self.overwrite = bool(info.flags & BPF_F_RB_OVERWRITE)
        kind = OverwriteRingbufRing if self.overwrite else RingbufRing
        state = kind(
            memoryview(self._cons_map)[:8],
            prod_view[:24],  # producer_pos, pending_pos, overwrite_pos
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
        """Stop reading and unmap the ring's pages. Idempotent. A page still exported to a
        view (one kept past its lease) stays mapped until that view is released;
        reading it then shows whatever the producer wrote there since."""
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
    arrives (a callback-driven consumer rather than a polled one) and ``poll()`` is
    refused.
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
        self._mapped: list[RingbufMappedRing] = []
        self.add(map, callback, drops=drops)

    def add(self, map: Any, callback: SampleCallback | None = None, *, drops: Any = None) -> int:
        """Add another ring; returns its index (rings are numbered in order added)."""
        self._check_open()
        check_callable("callback", callback)
        ring = RingbufMappedRing(_resolve(map, drops), callback, len(self._mapped))
        self._mapped.append(ring)
        self._add_ring(ring)
        return ring.index

    def replace(self, i: int, map: Any, *, drops: Any = None) -> RingbufMappedRing:
        """Read ring ``i`` from ``map`` from now on (same index, same callback) and
        return the ring read before: still mapped, no longer read by this consumer, but
        its wakeups still end a wait (:meth:`unwatch` ends that). Its new owner reads
        it to its end, unwatches and closes it; that is how a group's buffer moves to a
        ring of another size (:mod:`ringtool.readers.ringbuf_resize`).
        Refused (ConsumerStateError) while a lease is out or from inside a callback;
        a suspended ``read()`` batch is settled first."""
        self._check_open()
        old = self.ring(i)
        new = RingbufMappedRing(_resolve(map, drops), old.callback, i)
        try:
            self._swap_ring(i, new)
        except BaseException:
            new.close()
            raise
        self._mapped[i] = new
        return old

    def ring(self, i: int) -> RingbufMappedRing:
        """Ring ``i`` (0 = the first map): positions, ``size``, ``dropped()``."""
        if not isinstance(i, int) or not 0 <= i < len(self._mapped):
            raise BufferIndexError(f"ring index {i!r} out of range (ring_cnt = {self.ring_cnt})")
        return self._mapped[i]

    @property
    def ring_cnt(self) -> int:
        """The number of rings this consumer reads (one per :meth:`add`, in order added)."""
        return len(self._mapped)

    def overwritten(self) -> int:
        """Records skipped because the producer overwrote them, over the rings created
        with ``BPF_F_RB_OVERWRITE`` (0 for the others): never delivered, each counted
        once, exactly (see docs/library.md, overwrite mode)."""
        return sum(
            r.state.overwritten for r in self._mapped if isinstance(r.state, OverwriteRingbufRing)
        )

    def overwritten_uncounted_bytes(self) -> int:
        """Bytes of spans the producer rewrote before this reader could read any of
        their headers: the ring keeps no record count, so their records are not in
        :meth:`overwritten` (records of a fixed size: divide by the record span)."""
        return sum(
            r.state.uncounted_bytes
            for r in self._mapped
            if isinstance(r.state, OverwriteRingbufRing)
        )

    def dropped(self) -> list[int]:
        """Failed reservations per CPU, summed over the rings that count them."""
        total = [0] * possible_cpu_count()
        for ring in self._mapped:
            per_cpu = ring.dropped()
            if per_cpu:
                for cpu, n in enumerate(per_cpu):
                    total[cpu] += n
        return total


__all__ = ["RingBuffer", "RingbufMappedRing", "RingbufReaderRing"]
