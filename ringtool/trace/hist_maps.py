"""Reading the syscalls source's latency histogram maps (bpf/trace_syscalls.c).

Most latencies are counted in ``sys_lat``, an mmapable ARRAY indexed
``nr * FAST_BUCKETS + bucket`` (:class:`LatencyArray`: read from its mapping, no
syscall; the nonzero counts found with numpy); the rest in ``sys_hist``, a hash keyed
``nr << KEY_BITS | bucket``; ``drill_hist`` keys have the tgid in their high 32 bits
as well (buckets: :mod:`ringtool.trace.latency_buckets`). A busy machine has
thousands of used buckets, so the hashes are read with ``BPF_MAP_LOOKUP_BATCH`` (a few
syscalls; ~3 ms for 6,700 buckets where one lookup per key took ~40 ms), or key by key
where the kernel or BCC has no batch operations.
"""

from __future__ import annotations

import mmap
from typing import Any

import numpy as np

from ringtool.kernel.mapping import PAGE_SIZE, map_shared
from ringtool.trace.latency_buckets import FAST_BUCKETS, FAST_NRS, KEY_BITS

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


__all__ = ["Hists", "LatencyArray", "read_hists"]
