"""Reading the syscalls source's latency histogram maps (bpf/trace_syscalls.c).

Most latencies are counted in ``sys_lat``, an mmapable ARRAY indexed
``nr * FAST_BUCKETS + bucket`` (:class:`LatencyArray`: read from its mapping, no
syscall; the nonzero counts found with numpy); the rest in ``sys_hist``, a hash keyed
``nr << KEY_BITS | bucket``; ``drill_hist`` keys have the tgid in their high 32 bits
as well (buckets: :mod:`ringtool.trace.reading.latency_buckets`). A busy machine has
thousands of used buckets, so the hashes are read with ``BPF_MAP_LOOKUP_BATCH`` (a few
syscalls; ~3 ms for 6,700 buckets where one lookup per key took ~40 ms), or key by key
where the kernel or BCC has no batch operations.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable
from typing import Any

import numpy as np

from ringtool.kernel import bpf
from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.programs.loaded import LoadedProgram
from ringtool.trace.reading.latency_buckets import FAST_BUCKETS, FAST_NRS, KEY_BITS

Hists = dict[int, dict[int, int]]


def _all_items(table: Any) -> list[tuple[Any, Any]]:
    """Every ``(key, value)`` of a BCC hash table."""
    try:
        return list(table.items_lookup_batch())
    except Exception:  # no batch ops (kernel < 5.6) or an older BCC
        return list(table.items())


def _int(x: Any) -> int:
    """A key or value as BCC gives it (a ctypes integer, or an int from a batch)."""
    return int(getattr(x, "value", x))


def read_hists(table: Any, pid: int | None = None, into: Hists | None = None) -> Hists:
    """The hash ``[pid << 32 |] nr << KEY_BITS | bucket -> count`` as
    ``nr -> {bucket: count}`` (with ``pid``: only that process's keys), added to
    ``into`` when given."""
    out: Hists = {} if into is None else into
    mask = (1 << KEY_BITS) - 1
    for k, v in _all_items(table):
        key = _int(k)
        if pid is not None and key >> 32 != pid:
            continue
        nr = key >> KEY_BITS if pid is None else (key & 0xFFFFFFFF) >> KEY_BITS
        buckets = out.setdefault(nr, {})
        buckets[key & mask] = buckets.get(key & mask, 0) + _int(v)
    return out


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
    syscall, and per process for the drill-down. ``note`` is told once when the hash
    filled up. Valid until :meth:`close`."""

    def __init__(self, obj: LoadedProgram, note: Callable[[str], None]) -> None:
        self.obj = obj
        self.note = note
        self.drill_pid: int | None = None  # see set_drill
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

    def set_drill(self, pid: int | None) -> None:
        """Also count the syscalls of process ``pid`` (a tgid) per process, from now on
        (None: of nobody); the previous process's counts are cleared."""
        if pid == self.drill_pid:
            return
        drill = self.obj[b"drill"]
        drill[drill.Key(0)] = drill.Leaf(pid or 0)  # read by sys_exit (trace_syscalls.c)
        self.obj[b"drill_hist"].clear()  # the old pid's keys; late ones: told apart by tgid
        self.drill_pid = pid

    def drill(self) -> Hists:
        """The :meth:`set_drill` process's histograms since it was set."""
        if not self.drill_pid:
            return {}
        return read_hists(self.obj[b"drill_hist"], self.drill_pid)

    def close(self) -> None:
        if self._lat is not None:
            self._lat.close()
            self._lat = None


__all__ = ["Hists", "LatencyArray", "SyscallHists", "read_hists"]
