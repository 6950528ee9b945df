"""What ``ringtool trace`` traces: the sources and the filters, as the CLI parsed them."""

from __future__ import annotations

from dataclasses import dataclass

from ringtool.trace.reading.filters import CgroupFilter
from ringtool.trace.reading.sources import ALL_EVENTS, DEFAULT_EVENTS, RING_SOURCES

PAGE = 4096


@dataclass(frozen=True)
class TraceOptions:
    """What to trace. ``events`` ⊆ :data:`ALL_EVENTS`; ``pid``/``comm`` filter in the
    kernel; ``buffer_pages`` per CPU ring (power of two); ``slow_ms`` threshold of
    slow-syscall events; ``iface``/``snaplen`` for ``net``.

    ``wakeup_fill``: adaptive wakeups (bpf/percpu_ringbuf.h, rt_pcpu_submit): a record
    wakes the reader only once its CPU's ring is at least this full (0 < f <= 1);
    below that the reader polls, :meth:`TraceSession.wait` returning at least every
    ``max_latency_s``, which bounds how late a record is read. ``None``: the kernel's
    default (a wakeup for about every record while the reader keeps up).

    ``max_buffer_bytes``: rings grow instead of dropping, every ring together at most
    this (:mod:`ringtool.trace.reading.ring_growth`); None: they keep ``buffer_pages``.
    ``ring_quiet_s``: a grown ring idle this long steps down (halves).
    ``program_cache``: compiled programs are kept and loaded again (docs/trace.md,
    "Program cache"); False compiles every source with BCC."""

    events: tuple[str, ...] = DEFAULT_EVENTS
    pid: int | None = None
    comm: str | None = None
    #: in-kernel filters of :mod:`ringtool.trace.reading.filters`: ``-t``, ``-u``, ``--cgroup``,
    #: ``-x`` (open and exec: failed calls only)
    tid: int | None = None
    uid: int | None = None
    cgroup: CgroupFilter | None = None
    failed_only: bool = False
    buffer_pages: int = 64
    slow_ms: float = 100.0
    iface: str | None = None
    snaplen: int = 96
    perf_pages: int = 8
    wakeup_fill: float | None = 0.25
    max_latency_s: float = 0.05
    max_buffer_bytes: int | None = None
    ring_quiet_s: float = 30.0
    #: every process's syscall latencies kept in the kernel from the start (``proc_hist``,
    #: bpf/trace_syscalls.c): the dashboard's drill-down; off, the cost is not paid
    per_process: bool = False
    #: ``--flight-recorder``: bytes per CPU kept in the kernel
    #: (:mod:`ringtool.trace.recorder.flight`)
    flight_bytes: int | None = None
    #: load the RINGBUF sources from the program cache (``--no-cache``: False;
    #: :mod:`ringtool.programs.program_cache`)
    program_cache: bool = True


__all__ = ["ALL_EVENTS", "PAGE", "RING_SOURCES", "TraceOptions"]
