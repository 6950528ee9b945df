"""The ``-D`` constants the trace sources are compiled with (which filters are on, the
RINGBUF sources' ring group, histogram buckets, wakeup sizes) and the run-time values
they read from the config map (the filters' values, ringtool's pid, the slow-syscall
threshold): a compiled program depends on the first only (the program cache)."""

from __future__ import annotations

from pathlib import Path

from ringtool.errors import ArgumentError
from ringtool.trace.reading.filters import kernel_defines
from ringtool.trace.reading.latency_buckets import FAST_BUCKETS, FAST_NRS, KEY_BITS, SUB_BITS
from ringtool.trace.reading.options import PAGE, TraceOptions


def comm_words(comm: str) -> tuple[int, int]:
    """The kernel's 16-byte comm (at most 15 bytes + NUL) as two little-endian u64s."""
    raw = comm.encode()[:15].ljust(16, b"\0")
    return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")


def filter_defines(opts: TraceOptions) -> dict[str, int | str]:
    """The ``-D`` filter constants of bpf/trace_event.h for ``opts``: which filters are
    on (each ``1``); their values are :func:`config_values`'."""
    out: dict[str, int | str] = {}
    if opts.pid is not None:
        out["TRACE_FILTER_PID"] = 1
    if opts.comm:
        out["TRACE_FILTER_COMM"] = 1
    out.update(kernel_defines(tid=opts.tid, uid=opts.uid, cgroup=opts.cgroup,
                              failed_only=opts.failed_only))  # fmt: skip
    return out


#: The slots of bpf/trace_event.h's config map (TRACE_CFG_*), in order.
CONFIG_SLOTS = ("self_pid", "pid", "tid", "uid", "cgroup_id", "cgroup_level", "comm_lo",
                "comm_hi", "slow_ns")  # fmt: skip


def config_values(opts: TraceOptions, self_pid: int) -> bytes:
    """The config map's value (bpf/trace_event.h ``TRACE_CFG_*``: little-endian u64s)
    for ``opts``, ringtool itself being ``self_pid``: the filters' values (0 for a
    filter that is off, and compiled out) and the slow-syscall threshold."""
    lo, hi = comm_words(opts.comm) if opts.comm else (0, 0)
    cg = opts.cgroup
    values = {"self_pid": self_pid, "pid": opts.pid or 0, "tid": opts.tid or 0,
              "uid": opts.uid or 0, "cgroup_id": cg.id if cg else 0,
              "cgroup_level": cg.level if cg else 0, "comm_lo": lo, "comm_hi": hi,
              "slow_ns": int(opts.slow_ms * 1e6)}  # fmt: skip
    return b"".join(values[k].to_bytes(8, "little") for k in CONFIG_SLOTS)


def wakeup_bytes(ring_bytes: int, fill: float) -> int:
    """The bytes in a ring of ``ring_bytes`` from which records wake the reader
    (``fill`` of it, at least 1); :class:`ArgumentError` unless 0 < fill <= 1."""
    if not 0 < fill <= 1:
        raise ArgumentError(f"wakeup_fill must be in (0, 1], not {fill!r}")
    return max(1, int(ring_bytes * fill))


#: The most per-tid slots of the syscalls source (bpf/trace_syscalls.c: 32 bytes each,
#: 2 MiB): threads with a larger tid keep theirs in task storage.
MAX_TID_SLOTS = 65536
PID_MAX = Path("/proc/sys/kernel/pid_max")


def tid_slots(pid_max: Path = PID_MAX) -> int:
    """The syscalls source's per-tid slots: the kernel's ``pid_max`` (every tid is
    below it) up to :data:`MAX_TID_SLOTS`; that bound where it cannot be read."""
    try:
        return max(1, min(int(pid_max.read_text()), MAX_TID_SLOTS))
    except (OSError, ValueError):
        return MAX_TID_SLOTS


def ring_defines(opts: TraceOptions, group_cflags: list[str]) -> dict[str, int | str]:
    """The ``-D`` constants of the RINGBUF sources beyond the filters: the ring group's
    (its ``cflags()``), the latency histograms' buckets
    (:mod:`ringtool.trace.reading.latency_buckets`), whether every process's are kept
    too (``per_process``), the syscalls source's per-tid slots (:func:`tid_slots`) and,
    with adaptive wakeups, the bytes from which a record wakes the reader."""
    out = defines_of(group_cflags)
    out["TRACE_LAT_SUB_BITS"] = SUB_BITS
    out["TRACE_LAT_KEY_BITS"] = KEY_BITS
    out["TRACE_LAT_NRS"] = FAST_NRS
    out["TRACE_LAT_FAST_BUCKETS"] = FAST_BUCKETS
    out["TRACE_PROC_HIST"] = int(opts.per_process)
    out["TRACE_TID_SLOTS"] = tid_slots()
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


__all__ = ["CONFIG_SLOTS", "MAX_TID_SLOTS", "comm_words", "config_values", "defines_of",
           "filter_defines", "ring_defines", "tid_slots", "wakeup_bytes"]  # fmt: skip
