"""Reading the syscalls source's latency histogram maps (bpf/trace_syscalls.c).

``sys_hist`` keys are ``nr << KEY_BITS | bucket``, ``drill_hist`` keys have the tgid
in their high 32 bits as well (buckets: :mod:`ringtool.trace.latency_buckets`). A busy
machine has thousands of used buckets, so the map is read with
``BPF_MAP_LOOKUP_BATCH`` (a few syscalls; ~3 ms for 6,700 buckets where one lookup per
key took ~40 ms), or key by key where the kernel or BCC has no batch operations.
"""

from __future__ import annotations

from typing import Any

from ringtool.trace.latency_buckets import KEY_BITS


def _all_items(table: Any) -> list[tuple[Any, Any]]:
    """Every ``(key, value)`` of a BCC hash table."""
    try:
        return list(table.items_lookup_batch())
    except Exception:  # no batch ops (kernel < 5.6) or an older BCC
        return list(table.items())


def _int(x: Any) -> int:
    """A key or value as BCC gives it (a ctypes integer, or an int from a batch)."""
    return int(getattr(x, "value", x))


def read_hists(table: Any, pid: int | None = None) -> dict[int, dict[int, int]]:
    """The hash ``[pid << 32 |] nr << KEY_BITS | bucket -> count`` as
    ``nr -> {bucket: count}`` (with ``pid``: only that process's keys)."""
    out: dict[int, dict[int, int]] = {}
    mask = (1 << KEY_BITS) - 1
    for k, v in _all_items(table):
        key = _int(k)
        if pid is not None and key >> 32 != pid:
            continue
        nr = key >> KEY_BITS if pid is None else (key & 0xFFFFFFFF) >> KEY_BITS
        out.setdefault(nr, {})[key & mask] = _int(v)
    return out


__all__ = ["read_hists"]
