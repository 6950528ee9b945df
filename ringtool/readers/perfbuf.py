"""``PerfBuffer``: ringtool's own consumer of BPF_MAP_TYPE_PERF_EVENT_ARRAY maps.

Per CPU it opens a software BPF_OUTPUT perf event (sample_type PERF_SAMPLE_RAW), maps
its user page + ``page_cnt`` data pages, stores the perf fd in the map at that CPU's
index and enables it — what libbpf's ``perf_buffer__new`` does — and reads the rings
with :mod:`ringtool.protocol.perf`. Neither BCC's nor libbpf's reader is used.

Callback contract: ``sample_cb(cpu, data)`` receives a ``memoryview`` into the ring,
valid only during the call (released afterwards; ``bytes(data)`` keeps it). The raw
data is the BPF output padded by the kernel to a record multiple of 8, so it may be up
to 7 bytes longer than what the program passed. Return None or 0 to go on; a negative
int stops consumption at once and ``poll()``/``consume()`` return it (that record
counts as consumed, as in libbpf). ``lost_cb(cpu, count)`` is called for each
PERF_RECORD_LOST (in every reading style); ``lost()`` keeps per-CPU totals.

Buffer index is not CPU id: ``buffers[i].cpu`` says which CPU buffer ``i`` serves.

Zero-copy batches: ``lease_batch(dtype)`` (:mod:`ringtool.readers.consumer`) hands out
numpy arrays that are strided views of the mapped data area, one per run of equal
records that does not wrap its end (the area is mapped once, so a record that wraps
is a reassembled copy), committed once per CPU when the lease is released.

CPU hotplug: :meth:`PerfBuffer.check_cpus` (call it from the read loop; it reads the
online list at most once per second, :mod:`ringtool.kernel.hotplug`) notices CPUs
that went offline or came online. An offline CPU's buffer stays mapped and is read by
the usual calls until empty. A CPU that comes online gets a new perf event and buffer
(its fd stored in the map): the kernel detached the old event when the CPU went down
and does not re-attach it, so outputs on that CPU fail until then -- and a program
that counts failed outputs counts them; the old buffer stays in :attr:`buffers` (it
gets no new data). Each change is one line in the returned list.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from ringtool.errors import (
    ArgumentError,
    BufferIndexError,
    ConsumerStateError,
    MapTypeError,
    PerfEventOpenError,
    RingSizeError,
    RingtoolError,
)
from ringtool.kernel import bpf, perf_event
from ringtool.kernel.cpus import online_cpus
from ringtool.kernel.hotplug import OnlineWatcher
from ringtool.protocol.perf import PerfRing
from ringtool.protocol.perf_backward import read_backward
from ringtool.readers.args import UNLIMITED, check_callable, is_int, map_fd_of
from ringtool.readers.consumer import MultiRingConsumer
from ringtool.readers.perf_reader_ring import PerfReaderRing, SampleCallback

LostCallback = Callable[[int, int], Any]
PAGE_SIZE = perf_event.PAGE_SIZE


class PerfMappedRing(PerfReaderRing):
    """One CPU's perf ring, mapped into this process; implements the consumer ``Ring``
    (:class:`~ringtool.readers.perf_reader_ring.PerfReaderRing`).

    ``index`` is its position in :attr:`PerfBuffer.buffers`, ``cpu`` the CPU it serves,
    ``fd`` the perf event fd (also stored in the map at key ``cpu``).
    """

    def __init__(
        self,
        index: int,
        cpu: int,
        page_cnt: int,
        sample_cb: SampleCallback | None,
        lost_cb: LostCallback | None,
        attr: perf_event.PerfEventAttr,
        overwrite: bool,
    ) -> None:
        fd = perf_event.perf_event_open(attr, pid=-1, cpu=cpu)
        try:
            self._mm = perf_event.map_ring(fd, page_cnt, writable=not overwrite)
        except BaseException:
            os.close(fd)
            raise
        view = memoryview(self._mm)
        ring = PerfRing(view[:PAGE_SIZE], view[PAGE_SIZE:], cpu=cpu, index=index)
        view.release()
        ring.lost_cb = lost_cb
        super().__init__(index, cpu, ring, fd, sample_cb, overwrite=overwrite)

    def snapshot(self) -> list[bytes]:
        """Pause output, copy the newest records (oldest first), resume."""
        perf_event.pause_output(self.fd, True)
        try:
            return read_backward(self.ring)
        finally:
            perf_event.pause_output(self.fd, False)

    def close(self) -> None:
        if self._closed:
            return
        super().close()
        with contextlib.suppress(BufferError):  # a view is still exported (kept lease)
            self._mm.close()
        os.close(self.fd)


class PerfBuffer(MultiRingConsumer):
    """Per-CPU perf buffers over one PERF_EVENT_ARRAY map, read by ringtool itself.

    ``map`` is a BCC table (``bpf["events"]``) or a map fd (ringtool keeps a dup of it
    until close()). ``page_cnt`` data pages per CPU, a power of two. ``cpus``: attach
    only these CPUs (default: all online ones); offline or absent CPUs are skipped;
    an online CPU beyond the map's ``max_entries`` is an ArgumentError when asked for
    explicitly and skipped by default (as libbpf does). ``wakeup_events`` /
    ``watermark_bytes`` set when epoll reports a buffer readable. ``auto_callback=True``
    runs the callbacks on a background thread.
    ``overwrite=True`` makes each buffer a flight recorder (``write_backward``, mapped
    read-only: the kernel overwrites the oldest data); read it with :meth:`snapshot`.
    """

    def __init__(
        self,
        map: Any,  # the name the API promises
        sample_cb: SampleCallback | None,
        lost_cb: LostCallback | None = None,
        *,
        page_cnt: int = 8,
        cpus: Sequence[int] | None = None,
        wakeup_events: int = 1,
        watermark_bytes: int | None = None,
        auto_callback: bool = False,
        overwrite: bool = False,
    ) -> None:
        super().__init__(auto_callback=auto_callback and not overwrite, what="PerfBuffer")
        self._buffers: list[PerfMappedRing] = []
        self._live: dict[int, PerfMappedRing] = {}  # cpu -> the buffer whose fd is in the map
        self._map_fd = -1
        check_callable("sample_cb", sample_cb)
        check_callable("lost_cb", lost_cb)
        if not is_int(page_cnt) or page_cnt <= 0 or page_cnt & (page_cnt - 1):
            raise RingSizeError(f"page_cnt {page_cnt!r} is not a power of two (1, 2, 4, 8, ...)")
        if watermark_bytes is not None and not (
            is_int(watermark_bytes) and 0 < watermark_bytes <= page_cnt * PAGE_SIZE
        ):
            raise RingSizeError(
                f"watermark_bytes {watermark_bytes!r} must be within the "
                f"{page_cnt * PAGE_SIZE}-byte buffer"
            )
        if not is_int(wakeup_events) or not 0 <= wakeup_events < 2**32:
            raise ArgumentError(f"wakeup_events {wakeup_events!r} must be an int in [0, 2**32)")
        if cpus is not None and not all(is_int(c) for c in cpus):
            raise ArgumentError(f"cpus must be CPU numbers (ints), not {list(cpus)!r}")
        fd = map_fd_of(map)
        info = bpf.map_info(fd)
        if info.type != bpf.MapType.PERF_EVENT_ARRAY:
            raise MapTypeError(
                f"map {info.name or fd!r} is a {info.type_name} map, not PERF_EVENT_ARRAY: "
                "PerfBuffer reads BPF_MAP_TYPE_PERF_EVENT_ARRAY maps (use RingBuffer for "
                "RINGBUF)"
            )
        online = online_cpus()
        #: the hotplug watcher of check_cpus (replaceable: tests give it a fake list)
        self.cpu_watcher = OnlineWatcher(online)
        self._wanted = None if cpus is None else frozenset(cpus)
        self._max_entries, self._map_name = info.max_entries, info.name or str(fd)
        if cpus is None:
            chosen = [c for c in online if c < info.max_entries]
        else:
            chosen = [c for c in dict.fromkeys(cpus) if c in online]
            beyond = [c for c in chosen if c >= info.max_entries]
            if beyond:
                raise ArgumentError(
                    f"online CPUs {beyond} are beyond map {info.name or fd!r}'s max_entries "
                    f"{info.max_entries}: size the PERF_EVENT_ARRAY for every CPU"
                )
        if not chosen:
            raise ArgumentError(f"no online CPU to attach among cpus={list(cpus or [])}")
        self._map_fd = os.dup(fd)
        attr = perf_event.bpf_output_attr(
            wakeup_events=wakeup_events, watermark_bytes=watermark_bytes, backward=overwrite
        )
        self._open_args = (page_cnt, sample_cb, lost_cb, attr, overwrite)
        try:
            for cpu in chosen:
                try:
                    self._open_cpu(cpu)
                except PerfEventOpenError as exc:
                    if exc.errno == errno.ENODEV:  # went offline since online_cpus()
                        continue
                    raise
        except BaseException:
            self.close()
            raise

    def _open_cpu(self, cpu: int) -> PerfMappedRing:
        """Open ``cpu``'s perf event and buffer, add it to the rings, store its fd in
        the map (replacing a previous one: that buffer stays and is drained), enable."""
        page_cnt, sample_cb, lost_cb, attr, overwrite = self._open_args
        with self._lock:
            buf = PerfMappedRing(
                len(self._buffers), cpu, page_cnt, sample_cb, lost_cb, attr, overwrite
            )
            try:
                self._add_ring(buf)
            except BaseException:
                buf.close()
                raise
            self._buffers.append(buf)
            self._live[cpu] = buf
            bpf.map_update(self._map_fd, _u32(cpu), _u32(buf.fd))
            perf_event.enable(buf.fd)
            return buf

    # --- CPU hotplug -------------------------------------------------------------------

    def add_cpu(self, cpu: int) -> PerfMappedRing:
        """Open a buffer for ``cpu`` (one left out at start, or one that came online)
        and return it. :class:`ArgumentError` for a CPU beyond the map's max_entries or
        one that already has a live buffer; :class:`PerfEventOpenError` (ENODEV) for
        an offline CPU."""
        self._check_open()
        if not is_int(cpu) or not 0 <= cpu < self._max_entries:
            raise ArgumentError(
                f"cpu {cpu!r} is not a CPU number below map {self._map_name!r}'s "
                f"max_entries {self._max_entries}"
            )
        if cpu in self._live and cpu in self.cpu_watcher.online:
            raise ArgumentError(f"cpu {cpu} already has a perf buffer in this PerfBuffer")
        buf = self._open_cpu(cpu)
        if self._wanted is not None:
            self._wanted |= {cpu}  # followed across hotplug from now on
        return buf

    def check_cpus(self, *, force: bool = False) -> list[str]:
        """Follow CPU hotplug (see the module doc): at most one read of the online
        list per second (``force``: now). Returns one line per change."""
        if self._closed:
            return []
        change = self.cpu_watcher.check(force=force)
        notes: list[str] = []
        for cpu in change.offline:
            buf = self._live.get(cpu)
            if buf is not None:
                pending = buf.ring.page.data_head - buf.ring.page.data_tail
                notes.append(f"cpu {cpu} went offline: its perf buffer stays open and is "
                             f"drained ({pending} bytes pending)")  # fmt: skip
        for cpu in change.online:
            if self._wanted is not None and cpu not in self._wanted:
                continue
            if cpu >= self._max_entries:
                limit = f"map {self._map_name!r}'s max_entries {self._max_entries}"
                notes.append(f"cpu {cpu} came online beyond {limit}: its events are not read")
                continue
            old = self._live.get(cpu)
            try:
                self._open_cpu(cpu)
            except PerfEventOpenError as exc:
                notes.append(f"cpu {cpu} came online but its perf buffer could not be "
                             f"opened: {exc}")  # fmt: skip
                continue
            again = "" if old is None else " (the previous one is kept until drained)"
            notes.append(f"cpu {cpu} came online: opened a perf buffer for it{again}")
        return notes

    # --- libbpf-style accessors --------------------------------------------------------

    @property
    def buffers(self) -> list[PerfMappedRing]:
        """The per-CPU buffers in index order (``buffers[i].cpu`` is the CPU)."""
        return list(self._buffers)

    def buffer_cnt(self) -> int:
        """The number of per-CPU buffers (the CPUs opened: online ones, or the ``cpus=``
        subset); buffer indices run from 0 to this minus 1."""
        return len(self._buffers)

    def _index(self, i: int) -> int:
        if not is_int(i) or not 0 <= i < len(self._buffers):
            raise BufferIndexError(
                f"buffer index {i!r} out of range (buffer_cnt() = {self.buffer_cnt()})"
            )
        return i

    def buffer_fd(self, i: int) -> int:
        """The perf event fd of buffer ``i`` (epoll it to wait for that CPU alone)."""
        return self._buffers[self._index(i)].fd

    def consume_buffer(self, i: int) -> int:
        """Consume what buffer ``i`` holds (index, not CPU id), without waiting."""
        self._check_open()
        return self._drain([self._index(i)], UNLIMITED)

    def lost(self) -> dict[int, int]:
        """Per-CPU totals of the ``lost`` counts of PERF_RECORD_LOST records consumed."""
        return _per_cpu_sum((b.ring.cpu, b.ring.lost_total) for b in self._buffers)

    def unknown(self) -> dict[int, int]:
        """Per-CPU counts of records of other types, skipped."""
        return _per_cpu_sum((b.ring.cpu, b.ring.unknown) for b in self._buffers)

    def snapshot(self) -> dict[int, list[bytes]]:
        """Flight recorder (``overwrite=True``): per CPU, pause output, copy the newest
        records still in the ring (oldest first), resume. Outputs during the pause are
        dropped by the kernel."""
        self._check_open()
        if not self._buffers or not self._buffers[0].overwrite:
            raise ConsumerStateError("snapshot() needs PerfBuffer(..., overwrite=True)")
        out: dict[int, list[bytes]] = {}
        with self._lock:
            for b in self._buffers:  # a CPU's replaced buffer (older records) first
                out.setdefault(b.ring.cpu, []).extend(b.snapshot())
        return out

    def _finish_close(self) -> None:
        if self._closed:
            return
        for b in self._buffers:
            try:
                perf_event.disable(b.fd)
                bpf.map_delete(self._map_fd, _u32(b.ring.cpu))
            except (OSError, RingtoolError):  # map or fd already gone: nothing to detach
                pass
        super()._finish_close()
        if self._map_fd >= 0:
            bpf.close_fd(self._map_fd)
            self._map_fd = -1


def _per_cpu_sum(pairs: Iterable[tuple[int, int]]) -> dict[int, int]:
    out: dict[int, int] = {}
    for cpu, n in pairs:
        out[cpu] = out.get(cpu, 0) + n
    return out


def _u32(v: int) -> bytes:
    return v.to_bytes(4, "little")


__all__ = ["PerfBuffer", "PerfMappedRing"]
