"""Reading the syscalls source's latency histogram maps (bpf/trace_syscalls.c), and the
disk source's (bpf/trace_disk.c: one hash, keyed by device as ``sys_hist`` by syscall).

Most latencies are counted in ``sys_lat``, an mmapable ARRAY indexed
``nr * FAST_BUCKETS + bucket`` (:class:`LatencyArray`: read from its mapping, no
syscall; the nonzero counts found with numpy); the rest in ``sys_hist``, a hash keyed
``nr << KEY_BITS | bucket``; ``proc_hist`` (every process's, an LRU hash: the busiest
kept) has the tgid in its keys' high 32 bits as well (buckets:
:mod:`ringtool.trace.reading.latency_buckets`). A busy machine has thousands of used
buckets, so the hashes are read with ``BPF_MAP_LOOKUP_BATCH`` (a few
syscalls; ~3 ms for 6,700 buckets where one lookup per key took ~40 ms), or key by key
where the kernel or BCC has no batch operations.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Collection, Iterable
from typing import Any

import numpy as np

from ringtool.errors import BpfSyscallError
from ringtool.kernel import bpf
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.programs.loaded import LoadedProgram
from ringtool.trace.reading.latency_buckets import FAST_BUCKETS, FAST_NRS, KEY_BITS

Hists = dict[int, dict[int, int]]


def all_items(table: Any) -> list[tuple[Any, Any]]:
    """Every ``(key, value)`` of a BCC hash table."""
    try:
        return list(table.items_lookup_batch())
    except Exception:  # no batch ops (kernel < 5.6) or an older BCC
        return list(table.items())


def _int(x: Any) -> int:
    """A key or value as BCC gives it (a ctypes integer, or an int from a batch)."""
    return int(getattr(x, "value", x))


def read_hists(table: Any, pids: Collection[int] | None = None, into: Hists | None = None) -> Hists:
    """The hash ``[pid << 32 |] nr << KEY_BITS | bucket -> count`` as
    ``nr -> {bucket: count}`` (with ``pids``: only those processes' keys, added up),
    added to ``into`` when given."""
    return add_items(((_int(k), _int(v)) for k, v in all_items(table)), pids, into)


def add_items(
    items: Iterable[tuple[int, int]], pids: Collection[int] | None = None,
    into: Hists | None = None,
) -> Hists:  # fmt: skip
    """:func:`read_hists` of ``(key, count)`` pairs already read."""
    out: Hists = {} if into is None else into
    mask = (1 << KEY_BITS) - 1
    for key, n in items:
        if pids is not None and key >> 32 not in pids:
            continue
        nr = key >> KEY_BITS if pids is None else (key & 0xFFFFFFFF) >> KEY_BITS
        buckets = out.setdefault(nr, {})
        buckets[key & mask] = buckets.get(key & mask, 0) + n
    return out


def disk_hists(obj: Any) -> Hists:
    """The disk source's service-time histograms (bpf/trace_disk.c's ``disk_hist``,
    keyed ``dev << KEY_BITS | bucket``) as the kernel's ``dev_t -> {bucket: count}``;
    ``obj``: the source's BCC object (None: the source does not run: {})."""
    return {} if obj is None else read_hists(obj[b"disk_hist"])


class LatencyArray:
    """``sys_lat`` (BPF_F_MMAPABLE ARRAY of u64 counts) mapped read-only: the kernel's
    counts, live. :meth:`read` is valid until :meth:`close`."""

    def __init__(self, fd: int) -> None:
        n = FAST_NRS * FAST_BUCKETS
        length = -(-n * 8 // PAGE_SIZE) * PAGE_SIZE
        self._map: mmap.mmap | None = map_shared(
            fd, length, offset=0, writable=False, what="the syscall latency array"
        )
        self._counts = np.frombuffer(self._map, dtype=np.uint64, count=n)

    def read(self) -> Hists:
        """The nonzero counts as ``nr -> {bucket: count}``."""
        counts = self._counts.copy()  # one snapshot: the kernel goes on counting
        idx = np.flatnonzero(counts)
        out: Hists = {}
        for i, c in zip(idx.tolist(), counts[idx].tolist(), strict=True):
            nr, bucket = divmod(i, FAST_BUCKETS)
            out.setdefault(nr, {})[bucket] = c
        return out

    def close(self) -> None:
        if self._map is not None:
            del self._counts
            self._map.close()
            self._map = None


class SyscallHists:
    """The syscalls source's histograms (``obj``: its BCC object): cumulative per
    syscall, and per process (the drill-down's, read only when asked). ``note`` is
    told once when the hash filled up. Valid until :meth:`close`."""

    def __init__(self, obj: LoadedProgram, note: Callable[[str], None]) -> None:
        self.obj = obj
        self.note = note
        self._full = False
        self._lat: LatencyArray | None = None  # mapped at the first read

    def cumulative(self) -> Hists:
        """syscall nr -> {bucket: count} since the start (both maps added)."""
        lost: list[int] = bpf.percpu_u64(self.obj[b"hist_lost"].map_fd)
        if not self._full and sum(lost) > 0:
            self._full = True  # once: the p99s leave out what was not counted
            self.note("syscall latency histograms full: later latencies of new buckets "
                      "are not counted (p99s may be low)")  # fmt: skip
        if self._lat is None:
            self._lat = LatencyArray(self.obj[b"sys_lat"].map_fd)
        return read_hists(self.obj[b"sys_hist"], into=self._lat.read())

    def per_process(self, pids: Collection[int]) -> Hists:
        """The histograms of the processes ``pids`` (tgids) added up, since the start of
        the trace (what the kernel's LRU hash still holds of them: see
        bpf/trace_syscalls.c); {} for no pids."""
        if not pids:
            return {}
        table = self.obj[b"proc_hist"]
        try:  # the whole map in a few syscalls, filtered with numpy: ~10x BCC's items
            raw_keys, raw_values = bpf.map_lookup_batch_u64(table.map_fd, table.max_entries)
        except BpfSyscallError:  # no batch operations (kernel < 5.6)
            return read_hists(table, frozenset(pids))
        keys = np.frombuffer(raw_keys, dtype=np.uint64)
        mine = np.isin(keys >> np.uint64(32), np.fromiter(pids, dtype=np.uint64))
        values = np.frombuffer(raw_values, dtype=np.uint64)[mine]
        return add_items(zip(keys[mine].tolist(), values.tolist(), strict=True), pids)

    def close(self) -> None:
        if self._lat is not None:
            self._lat.close()
            self._lat = None


__all__ = [
    "Hists",
    "LatencyArray",
    "SyscallHists",
    "add_items",
    "all_items",
    "disk_hists",
    "read_hists",
]
