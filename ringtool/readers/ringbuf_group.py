"""Per-CPU BPF ring buffer groups: one RINGBUF per N CPUs, read in timestamp order.

:class:`RingBufGroup` creates the maps that ``bpf/percpu_ringbuf.h`` uses -- the inner
RINGBUF maps, the ARRAY_OF_MAPS holding them (buffer id -> ring), the cpu -> buffer
id ARRAY and a per-CPU drop counter -- fills them, and hands out the ``-D`` cflags a
BCC program needs to include the header. :meth:`RingBufGroup.consumer` maps every
inner ring in one :class:`ringtool.RingBuffer` (ring index = buffer id), and
:func:`merge_rings` turns any consumer's rings into a :mod:`ringtool.merge` stream.

Buffer ids (not CPU ids): ids 0..B-1 are given to the *online* CPUs in ascending order,
N at a time, so they are contiguous even when some CPUs are offline. With N >= 1,
CPUs offline at setup get no buffer (their events are dropped and counted) until
:meth:`RingBufGroup.check_cpus` sees them come online. With N = 0 every CPU writes to
the one buffer.

CPU hotplug: a RINGBUF does not depend on its CPU being online, so a CPU that goes
offline keeps its ring (read until empty by the consumers as usual) and one that comes
back writes to the ring it had. ``check_cpus()`` (call it from the read loop; the
online list is read at most once per second) reports both in one line each, and for a
CPU that had no ring (offline at setup) creates one: added to the ARRAY_OF_MAPS
(sized for every possible CPU) and to every consumer made by :meth:`consumer`, then
entered in the cpu -> buffer id map, so its first event already has a reader.

Lifetime: the group owns its map fds (close() or ``with``); a loaded program keeps its
own references to the maps, and the consumer maps the rings (closing the group does
not unmap them).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ringtool.bpf_files import bpf_dir
from ringtool.errors import ArgumentError, ConsumerStateError, RingSizeError, RingtoolError
from ringtool.kernel import bpf
from ringtool.kernel.background_update import BackgroundUpdate
from ringtool.kernel.closing import Closing
from ringtool.kernel.cpus import online_cpus, possible_cpu_count
from ringtool.kernel.hotplug import OnlineWatcher
from ringtool.merge import Algorithm, Merger, ReaderRing, merge_sources, ring_source
from ringtool.readers.args import check_callable, is_int
from ringtool.readers.ringbuf import RingBuffer

#: Value of the cpu -> buffer id map for CPUs with no buffer (RT_PCPU_NO_BUF in C).
NO_BUFFER = 0xFFFFFFFF

#: Where ``percpu_ringbuf.h`` lives (pass ``-I`` this, see RingBufGroup.cflags()).
BPF_INCLUDE_DIR = bpf_dir()

_PAGE = 4096


@dataclass(frozen=True, slots=True)
class GroupLayout:
    """Which CPU writes to which buffer.

    ``cpu_to_buffer`` maps each online CPU to its buffer id; ``buffers`` is B.
    """

    cpus_per_buffer: int
    cpu_to_buffer: dict[int, int]
    buffers: int

    def cpus_of(self, buffer_id: int) -> list[int]:
        """The CPUs writing to buffer ``buffer_id``, ascending."""
        return sorted(c for c, b in self.cpu_to_buffer.items() if b == buffer_id)


def group_cflags(layout: GroupLayout, rings_fd: int, cpumap_fd: int, drops_fd: int) -> list[str]:
    """:meth:`RingBufGroup.cflags` of a group of ``layout`` with these map fds (the
    program cache's key names the fds, so any value gives the key of a group)."""
    return [
        f"-I{BPF_INCLUDE_DIR}",
        f"-DRT_PCPU_RINGS_FD={rings_fd}",
        f"-DRT_PCPU_CPUMAP_FD={cpumap_fd}",
        f"-DRT_PCPU_DROPS_FD={drops_fd}",
        f"-DRT_PCPU_NR_BUFS={layout.buffers}",
        f"-DRT_PCPU_CPUS_PER_BUF={layout.cpus_per_buffer}",
    ]


def assign_buffers(cpus: Sequence[int], cpus_per_buffer: int) -> GroupLayout:
    """Give the CPUs ``cpus`` (the online ones) contiguous buffer ids.

    ``cpus_per_buffer`` N >= 1 puts N CPUs (in ascending CPU order) in each buffer;
    0 puts all of them in one shared buffer. Pure: no syscalls.
    """
    if not is_int(cpus_per_buffer) or cpus_per_buffer < 0:
        raise ArgumentError(
            f"cpus_per_buffer must be an int >= 0 (0 = one shared), not {cpus_per_buffer!r}"
        )
    if not all(is_int(c) and 0 <= c < NO_BUFFER for c in cpus):
        raise ArgumentError(f"cpus must be CPU numbers (ints >= 0), not {list(cpus)!r}")
    ordered = sorted(set(cpus))
    if not ordered:
        raise ArgumentError("no CPUs to assign buffers to")
    n = len(ordered) if cpus_per_buffer == 0 else cpus_per_buffer
    mapping = {cpu: pos // n for pos, cpu in enumerate(ordered)}
    return GroupLayout(
        cpus_per_buffer=cpus_per_buffer,
        cpu_to_buffer=mapping,
        buffers=(len(ordered) + n - 1) // n,
    )


def _check_ring_bytes(ring_bytes: int) -> None:
    if not is_int(ring_bytes):
        raise RingSizeError(f"ring_bytes={ring_bytes!r}: give a number of bytes (int)")
    pages = ring_bytes // _PAGE
    if ring_bytes < _PAGE or ring_bytes % _PAGE or pages & (pages - 1):
        raise RingSizeError(
            f"ring_bytes={ring_bytes}: a RINGBUF must be a power of two of {_PAGE}-byte pages"
        )


class RingBufGroup(Closing):
    """The maps of one per-CPU ring buffer group (see the module doc).

    ``cpus_per_buffer``: 1 = one ring per CPU, N = one per N CPUs, 0 = one shared.
    ``ring_bytes``: size of each inner ring (power of two of pages).
    ``cpus``: the CPUs to give buffers to (default: the online ones).
    ``ring_flags``: the inner rings' map flags (``BPF_F_RB_OVERWRITE``: overwrite mode).
    ``fill_later``: a thread enters the rings in the ARRAY_OF_MAPS (that write sleeps
    an RCU grace period) while the caller loads programs: :meth:`filled` before attach.
    """

    def __init__(
        self,
        *,
        cpus_per_buffer: int = 1,
        ring_bytes: int = 256 * 1024,
        cpus: Sequence[int] | None = None,
        ring_flags: int = 0,
        fill_later: bool = False,
    ) -> None:
        _check_ring_bytes(ring_bytes)
        self.ring_flags = ring_flags  # map_flags of every inner RINGBUF
        if cpus is not None:
            absent = [c for c in cpus if is_int(c) and c >= possible_cpu_count()]
            if absent:
                raise ArgumentError(
                    f"cpus {absent} do not exist (possible CPUs: 0-{possible_cpu_count() - 1})"
                )
        online = online_cpus()
        self.layout = assign_buffers(online if cpus is None else cpus, cpus_per_buffer)
        self.ring_bytes = ring_bytes
        #: the hotplug watcher of check_cpus (replaceable: tests give it a fake list)
        self.cpu_watcher = OnlineWatcher(online)
        self._wanted = None if cpus is None else frozenset(cpus)
        self._consumers: list[tuple[RingBuffer, Callable[[memoryview], Any] | None]] = []
        self._fds: list[int] = []
        self._sizes: dict[int, int] = {}  # ring fd -> its size in bytes
        self._filling: BackgroundUpdate | None = None
        try:
            self.ring_fds = [self._create_ring() for _ in range(self.layout.buffers)]
            ncpu = max(possible_cpu_count(), max(self.layout.cpu_to_buffer) + 1)
            self.rings_fd = self._own(
                bpf.map_create(
                    bpf.MapType.ARRAY_OF_MAPS,
                    key_size=4,
                    value_size=4,
                    max_entries=max(self.layout.buffers, ncpu),  # room for hotplugged CPUs
                    inner_map_fd=self.ring_fds[0],  # the template: type/flags must match
                )
            )
            self.cpumap_fd = self._own(
                bpf.map_create(bpf.MapType.ARRAY, key_size=4, value_size=4, max_entries=ncpu)
            )
            self.drops_fd = self._own(
                bpf.map_create(bpf.MapType.PERCPU_ARRAY, key_size=4, value_size=8, max_entries=1)
            )
            # one batch each: the ARRAY_OF_MAPS's writes wait for one RCU grace period
            # in all, not one per ring (bpf.map_update_many)
            rings = [(_u32(bid), _u32(fd)) for bid, fd in enumerate(self.ring_fds)]
            if fill_later:
                self._filling = BackgroundUpdate(self.rings_fd, rings)
            else:
                bpf.map_update_many(self.rings_fd, rings)
            shared = cpus_per_buffer == 0  # every CPU, even one offline now, shares it
            cpu_buffer = self.layout.cpu_to_buffer
            bpf.map_update_many(self.cpumap_fd, [
                (_u32(cpu), _u32(0 if shared else cpu_buffer.get(cpu, NO_BUFFER)))
                for cpu in range(ncpu)
            ])  # fmt: skip
        except BaseException:
            self.close()
            raise
        self._ncpu = ncpu

    def filled(self) -> None:
        """Return once every ring is in the ARRAY_OF_MAPS; the write's error if any."""
        if self._filling is not None:
            self._filling.wait()

    def _own(self, fd: int) -> int:
        self._fds.append(fd)
        return fd

    def _create_ring(self, ring_bytes: int | None = None) -> int:
        size = self.ring_bytes if ring_bytes is None else ring_bytes
        fd = self._own(
            bpf.map_create(
                bpf.MapType.RINGBUF,
                key_size=0,
                value_size=0,
                max_entries=size,
                flags=self.ring_flags,
            )
        )
        self._sizes[fd] = size
        return fd

    # --- moving a buffer to another ring (ringtool.readers.ringbuf_resize drives these)

    def ring_size(self, buffer_id: int) -> int:
        """The size in bytes of buffer ``buffer_id``'s ring now."""
        return self._sizes[self.ring_fds[buffer_id]]

    def new_ring(self, ring_bytes: int) -> int:
        """A new RINGBUF of ``ring_bytes`` (a power of two of pages), owned by the
        group (closed by :meth:`close` or :meth:`release_ring`), not in use yet."""
        _check_ring_bytes(ring_bytes)
        if not self._fds:
            raise ConsumerStateError("RingBufGroup is closed: its ring fds are gone")
        return self._create_ring(ring_bytes)

    def swap_ring(self, buffer_id: int, fd: int) -> int:
        """Make ``fd`` (from :meth:`new_ring`) buffer ``buffer_id``'s ring for the
        programs and return the fd of the ring it had. BPF_MAP_UPDATE_ELEM on the
        ARRAY_OF_MAPS: the kernel (kernel/bpf/syscall.c, map_update_elem ->
        maybe_wait_bpf_programs) returns only after synchronize_rcu(), so when this
        returns no non-sleepable program still holds the old ring: it is written no
        more. Blocks for that grace period (milliseconds); call it off the read loop."""
        if not 0 <= buffer_id < len(self.ring_fds) or fd not in self._sizes:
            raise ArgumentError(f"swap_ring({buffer_id!r}, {fd!r}): not a buffer and ring "
                                "of this group")  # fmt: skip
        self.filled()
        bpf.map_update(self.rings_fd, _u32(buffer_id), _u32(fd))
        old, self.ring_fds[buffer_id] = self.ring_fds[buffer_id], fd
        return old

    def ring_bytes_total(self) -> int:
        """The bytes of every ring the group has now: in use, made and not swapped in
        yet, swapped out and not released yet."""
        return sum(list(self._sizes.values()))  # list(): one step under the GIL

    def release_ring(self, fd: int) -> None:
        """Close a ring fd the programs no longer use (one :meth:`swap_ring` gave back,
        or one :meth:`new_ring` made that was never swapped in)."""
        if fd in self._sizes and fd not in self.ring_fds and fd in self._fds:
            self._fds.remove(fd)
            del self._sizes[fd]
            bpf.close_fd(fd)

    @property
    def buffers(self) -> int:
        """B, the number of RINGBUF maps in the group (buffer ids 0..B-1; 1 with
        ``cpus_per_buffer=0``)."""
        return self.layout.buffers

    def cflags(self) -> list[str]:
        """The ``-I``/``-D`` flags for a BCC program that includes percpu_ringbuf.h."""
        return group_cflags(self.layout, self.rings_fd, self.cpumap_fd, self.drops_fd)

    def consumer(
        self,
        callback: Callable[[memoryview], Any] | None = None,
        *,
        auto_callback: bool = False,
    ) -> RingBuffer:
        """One :class:`ringtool.RingBuffer` over every inner ring, ring i = buffer id i.

        The caller closes it. ``callback`` gets every ring's records (None for the
        iterator / lease / batch styles and for :func:`merge_rings`).
        """
        check_callable("callback", callback)
        if not self._fds:
            raise ConsumerStateError("RingBufGroup is closed: its ring fds are gone")
        rb = RingBuffer(self.ring_fds[0], callback, auto_callback=auto_callback)
        try:
            for fd in self.ring_fds[1:]:
                rb.add(fd, callback)
        except BaseException:
            rb.close()
            raise
        self._consumers.append((rb, callback))
        return rb

    def check_cpus(self, *, force: bool = False) -> list[str]:
        """Follow CPU hotplug (see the module doc): at most one read of the online list
        per second (``force``: now). Returns one line per change."""
        if not self._fds:
            return []
        change = self.cpu_watcher.check(force=force)
        shared = self.layout.cpus_per_buffer == 0
        notes: list[str] = []
        for cpu in change.offline:
            bid = 0 if shared else self.layout.cpu_to_buffer.get(cpu)
            if bid is not None:
                notes.append(f"cpu {cpu} went offline: its ring buffer {bid} is read until empty")
        for cpu in change.online:
            bid = 0 if shared else self.layout.cpu_to_buffer.get(cpu)
            if bid is not None:
                notes.append(f"cpu {cpu} came online: it writes to its ring buffer {bid} again")
            elif self._wanted is None or cpu in self._wanted:
                try:
                    bid = self.add_cpu(cpu)
                except (RingtoolError, OSError) as exc:
                    notes.append(f"cpu {cpu} came online but no ring buffer could be made for "
                                 f"it (its events are dropped and counted): {exc}")  # fmt: skip
                    continue
                notes.append(f"cpu {cpu} came online: opened ring buffer {bid} for it")
        return notes

    def add_cpu(self, cpu: int) -> int:
        """Give ``cpu`` (one with no buffer yet) a new ring and return its buffer id: in
        the ARRAY_OF_MAPS, in every open consumer, and only then in the cpu -> buffer
        id map (the program's first write has a reader). :class:`ArgumentError` for a
        CPU that has a buffer, a shared group, or a CPU beyond the group's maps."""
        if not self._fds:
            raise ConsumerStateError("RingBufGroup is closed: its ring fds are gone")
        if not is_int(cpu) or not 0 <= cpu < self._ncpu:
            raise ArgumentError(
                f"cpu {cpu!r} is not a CPU of the group's maps (0-{self._ncpu - 1})"
            )
        if self.layout.cpus_per_buffer == 0 or cpu in self.layout.cpu_to_buffer:
            raise ArgumentError(f"cpu {cpu} already writes to a ring buffer of this group")
        self.filled()
        bid = self.layout.buffers
        fd = self._create_ring()
        bpf.map_update(self.rings_fd, _u32(bid), _u32(fd))
        self.ring_fds.append(fd)
        for rb, callback in list(self._consumers):
            try:
                if rb.ring_cnt == bid:  # ring index = buffer id
                    rb.add(fd, callback)
            except ConsumerStateError:  # closed by its owner: forget it
                self._consumers.remove((rb, callback))
        self.layout = replace(
            self.layout,
            cpu_to_buffer={**self.layout.cpu_to_buffer, cpu: bid},
            buffers=bid + 1,
        )
        bpf.map_update(self.cpumap_fd, _u32(cpu), _u32(bid))
        return bid

    def dropped(self) -> list[int]:
        """Events lost per CPU (ring full, or a CPU with no buffer)."""
        if not self._fds:
            return []
        return bpf.percpu_u64(self.drops_fd)

    def close(self) -> None:
        """Close the group's map fds (idempotent), the filling thread done first."""
        with contextlib.suppress(RingtoolError):  # the fds go all the same
            self.filled()
        fds, self._fds = self._fds, []
        for fd in fds:
            bpf.close_fd(fd)


def merge_rings(
    rings: Sequence[ReaderRing],
    timestamp: Callable[[bytes], int],
    *,
    algorithm: Algorithm = "optimized",
    window_us: float | None = None,
    batch: int = 256,
) -> Merger[bytes]:
    """A timestamp-ordered merge over ``rings`` (buffer id = position), each read by
    a :class:`ringtool.merge.RingSource`; events are ``(timestamp(record), record
    bytes)``.

    Works for ringtool's reader rings: ``[rb.ring(i) for i in range(rb.ring_cnt)]`` of
    a RingBuffer (e.g. :meth:`RingBufGroup.consumer`), ``pb.buffers`` of a PerfBuffer.
    Use it instead of the consumer's callback/iterator styles (both consume). A ring's
    position covers only the events the merge took: ``close()`` the merger (or drop
    it) before closing the consumer, and the rest is given back to the rings.
    """
    sources = [ring_source(r, timestamp, batch=batch) for r in rings]
    return merge_sources(sources, algorithm=algorithm, window_us=window_us)


def _u32(v: int) -> bytes:
    return v.to_bytes(4, "little")


__all__ = [
    "BPF_INCLUDE_DIR",
    "NO_BUFFER",
    "GroupLayout",
    "RingBufGroup",
    "assign_buffers",
    "group_cflags",
    "merge_rings",
]
