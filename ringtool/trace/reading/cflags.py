"""The ``-D`` constants the trace sources are compiled with: filters, the RINGBUF
sources' ring group, threshold and histogram buckets, wakeup sizes."""

from __future__ import annotations

from ringtool.errors import ArgumentError
from ringtool.trace.reading.filters import kernel_defines
from ringtool.trace.reading.latency_buckets import FAST_BUCKETS, FAST_NRS, KEY_BITS, SUB_BITS
from ringtool.trace.reading.options import PAGE, TraceOptions


def comm_words(comm: str) -> tuple[int, int]:
    """The kernel's 16-byte comm (at most 15 bytes + NUL) as two little-endian u64s."""
    raw = comm.encode()[:15].ljust(16, b"\0")
    return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")


def filter_defines(opts: TraceOptions, self_pid: int) -> dict[str, int | str]:
    """The ``-D`` filter constants of bpf/trace_event.h for ``opts``."""
    out: dict[str, int | str] = {"TRACE_SELF_PID": self_pid}
    if opts.pid is not None:
        out["TRACE_FILTER_PID"] = opts.pid
    if opts.comm:
        lo, hi = comm_words(opts.comm)
        out["TRACE_FILTER_COMM_LO"] = f"{lo:#x}ULL"
        out["TRACE_FILTER_COMM_HI"] = f"{hi:#x}ULL"
    out.update(kernel_defines(tid=opts.tid, uid=opts.uid, cgroup=opts.cgroup,
                              failed_only=opts.failed_only))  # fmt: skip
    return out


def wakeup_bytes(ring_bytes: int, fill: float) -> int:
    """The bytes in a ring of ``ring_bytes`` from which records wake the reader
    (``fill`` of it, at least 1); :class:`ArgumentError` unless 0 < fill <= 1."""
    if not 0 < fill <= 1:
        raise ArgumentError(f"wakeup_fill must be in (0, 1], not {fill!r}")
    return max(1, int(ring_bytes * fill))


def ring_defines(opts: TraceOptions, group_cflags: list[str]) -> dict[str, int | str]:
    """The ``-D`` constants of the RINGBUF sources beyond the filters: the ring group's
    (its ``cflags()``), the slow-syscall threshold, the latency histograms' buckets
    (:mod:`ringtool.trace.reading.latency_buckets`), whether every process's are kept
    too (``per_process``) and, with adaptive wakeups, the bytes from
    which a record wakes the reader."""
    out = defines_of(group_cflags)
    out["TRACE_SLOW_NS"] = f"{int(opts.slow_ms * 1e6)}ULL"
    out["TRACE_LAT_SUB_BITS"] = SUB_BITS
    out["TRACE_LAT_KEY_BITS"] = KEY_BITS
    out["TRACE_LAT_NRS"] = FAST_NRS
    out["TRACE_LAT_FAST_BUCKETS"] = FAST_BUCKETS
    out["TRACE_PROC_HIST"] = int(opts.per_process)
    if opts.wakeup_fill is not None:
        out["RT_PCPU_WAKEUP_BYTES"] = wakeup_bytes(opts.buffer_pages * PAGE, opts.wakeup_fill)
    return out


def defines_of(cflags: list[str]) -> dict[str, int | str]:
    """``-DKEY=VALUE`` flags as a dict (the loader adds ``-I`` itself)."""
    out: dict[str, int | str] = {}
    for flag in cflags:
        if flag.startswith("-D") and "=" in flag:
            key, value = flag[2:].split("=", 1)
            out[key] = value
    return out


__all__ = ["comm_words", "defines_of", "filter_defines", "ring_defines", "wakeup_bytes"]
