"""Aggregation for ``ringtool trace``: totals, rates, top processes, syscall latency.

:class:`TraceStats` is fed record batches (:meth:`add_batch`, vectorised with numpy),
net packets (:meth:`add_net`), ring fill samples (:meth:`observe_fill`) and,
once per interval, the kernel counters (:meth:`tick`). It never touches the kernel.

Drops and losses are kernel totals taken at each tick; the ticks where they grew are
kept (:attr:`TraceStats.drop_log`, the last :data:`DROP_LOG` of them) with the
interval's end as seconds since reading started, so a burst is shown with when it
happened instead of only as a total that never grows again.

Histograms are the syscalls source's log-linear buckets
(:mod:`ringtool.trace.reading.latency_buckets`); a row's p99 is
:func:`~ringtool.trace.reading.latency_buckets.quantile`'s, within 1.6% of the true one.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ringtool.event.columns import code_counts, cstrings
from ringtool.event.decode import cstr
from ringtool.event.records import NetRecords
from ringtool.event.registry import SOURCE_OF
from ringtool.trace.reading.cost import CostReport
from ringtool.trace.reading.cpuwait_maps import CpuWaits
from ringtool.trace.reading.flight_count import Overwritten
from ringtool.trace.reading.latency_buckets import quantile
from ringtool.trace.reading.tcp_conns import OpenConns
from ringtool.trace.report.cpuwait import CpuWaitStats, cpuwait_stats
from ringtool.trace.report.proc_names import latest_names, shown_comm
from ringtool.trace.report.proctree import ProcessTree
from ringtool.trace.report.waits import is_wait

HISTORY = 120
#: Intervals with drops or losses remembered (the oldest are forgotten first).
DROP_LOG = 1000


@dataclass(frozen=True)
class DropMark:
    """An interval in which the kernel dropped (ring full) or lost (perf) events:
    its end as ``uptime_s`` (seconds since reading started) and wall-clock ``time``
    (UNIX seconds), and the counts of that interval."""

    uptime_s: float
    time: float
    dropped: int
    lost: int


@dataclass
class SyscallRow:
    nr: int
    name: str
    count: int
    rate: float
    p99_ns: float


@dataclass
class TraceStats:
    """Running aggregates of one trace (see the module doc).

    ``type_names`` maps the record ``type`` ids to names (layout.type_names).
    """

    type_names: dict[int, str]
    ncpu: int
    sources: list[str]
    syscall_name: Callable[[int], str] = lambda nr: f"sys_{nr}"
    start: float = field(default_factory=time.monotonic)
    total: int = 0
    by_type: dict[str, int] = field(default_factory=dict)
    per_cpu: list[int] = field(init=False)
    procs: dict[int, list[Any]] = field(default_factory=dict)  # pid -> [comm, count, comm's ts]
    drops_cpu: list[int] = field(default_factory=list)
    drops_source: dict[str, int] = field(default_factory=dict)
    drops_source_cpu: dict[str, list[int]] = field(default_factory=dict)
    lost_cpu: dict[int, int] = field(default_factory=dict)
    fill_cpu: dict[int, float] = field(default_factory=dict)
    syscalls: list[SyscallRow] = field(default_factory=list)
    rate_total: float = 0.0
    rate_source: dict[str, float] = field(default_factory=dict)
    rate_cpu: list[float] = field(init=False)
    history: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY))
    history_cpu: list[deque[float]] = field(init=False)
    _mark_total: int = 0
    _mark_type: dict[str, int] = field(default_factory=dict)
    _mark_cpu: list[int] = field(init=False)
    _mark_procs: dict[int, int] = field(default_factory=dict)
    _recent_procs: dict[int, int] = field(default_factory=dict)
    _mark_time: float = field(init=False)
    #: ``--ordered`` only: the merge's out-of-order accounting (see set_ordering)
    ordering: dict[str, Any] | None = None
    #: the RINGBUF rings' sizes and switches (ringtool.trace.reading.ring_growth's record)
    rings: dict[str, Any] | None = None
    #: ``--export`` only: the exporter's counters (ringtool.export.accounting snapshot)
    export: dict[str, Any] | None = None
    #: what tracing costs (BPF run time, ringtool's CPU), sampled each interval
    cost: CostReport | None = None
    #: samples too short to decode (counted, never output; see Decoder.malformed)
    malformed: int = 0
    #: a flight recorder's overwritten events (ringtool.trace.reading.flight_count), else None
    overwritten: Overwritten | None = None
    _sys_prev: dict[int, int] = field(default_factory=dict)
    _fill_max: dict[int, float] = field(default_factory=dict)
    #: the last interval's drops per CPU, drops and losses (the totals' growth)
    drops_cpu_interval: list[int] = field(default_factory=list)
    dropped_interval: int = 0
    lost_interval: int = 0
    drop_log: deque[DropMark] = field(default_factory=lambda: deque(maxlen=DROP_LOG))
    drop_intervals: int = 0  # intervals with drops or losses (also those forgotten)
    #: the latest cumulative histograms of every syscall: nr -> {bucket: count}
    sys_hist: dict[int, dict[int, int]] = field(default_factory=dict)
    #: the latest cumulative service-time histograms of the disk source: the kernel's
    #: dev_t -> {bucket: count} (the same log-linear buckets)
    disk_hist: dict[int, dict[int, int]] = field(default_factory=dict)
    #: the dashboard's drill-down: what it is of (a pid, or a comm: every process of
    #: that name), its syscalls' histograms and rows since the trace started (count,
    #: rate, p99)
    drill_key: int | str | None = None
    drill_hist: dict[int, dict[int, int]] = field(default_factory=dict)
    drill_syscalls: list[SyscallRow] = field(default_factory=list)
    _drill_prev: dict[int, int] = field(default_factory=dict)
    #: the cpuwait source's latest reading (per process and the machine), else None
    cpuwait: CpuWaitStats | None = None
    #: the tcp source's open connections at the last tick, when read (the dashboard's
    #: connections panel is on screen), else None
    tcp_open: OpenConns | None = None
    #: the tcp source's live counters: pid -> (sent, received) bytes (None: not counted)
    tcp_io: dict[int, tuple[int, int]] | None = None
    #: the drill-down's open connections (bpf/trace_tcp.c's ``conns``), else None
    drill_conns: np.ndarray[Any, Any] | None = None
    #: the children each process forked while traced (the drill-down lists them)
    tree: ProcessTree = field(init=False)
    #: when reading ended (monotonic s; None: still reading): :attr:`uptime` stops there
    end: float | None = None

    def __post_init__(self) -> None:
        self.per_cpu = [0] * self.ncpu
        fork = [t for t, name in self.type_names.items() if name == "fork"]
        self.tree = ProcessTree(fork[0] if fork else None)
        self.rate_cpu = [0.0] * self.ncpu
        self.history_cpu = [deque(maxlen=HISTORY) for _ in range(self.ncpu)]
        self._mark_cpu = [0] * self.ncpu
        self._mark_time = self.start
        self.drops_cpu = [0] * self.ncpu
        self.drops_cpu_interval = [0] * self.ncpu

    @property
    def interval_dropped(self) -> bool:
        """The last interval had drops or losses: its stats line is written even
        without ``--stats`` (a drop is never silent until the summary)."""
        return bool(self.dropped_interval or self.lost_interval)

    def begin(self, now: float | None = None) -> None:
        """Reading starts now (the sources were just attached): uptime and the first
        interval count from here, and fill samples taken before are forgotten."""
        self.start = self._mark_time = time.monotonic() if now is None else now
        self._fill_max = {}

    # --- feeding -----------------------------------------------------------------------

    def add_batch(self, arr: np.ndarray[Any, Any]) -> None:
        """Count a ``struct trace_event`` record array (vectorised)."""
        n = len(arr)
        if n == 0:
            return
        h = arr["h"]
        self.total += n
        t_col = h["type"]
        if (t_col == t_col[0]).all():  # one type (the common case): no sort
            types, counts = [int(t_col[0])], [n]
        else:
            types, counts = code_counts(t_col)
        for t, c in zip(types, counts, strict=True):
            name = self.type_names.get(t, str(t))
            self.by_type[name] = self.by_type.get(name, 0) + c
        cpus = np.bincount(h["cpu"], minlength=self.ncpu).tolist()
        for cpu, c in enumerate(cpus):
            if cpu < self.ncpu:
                self.per_cpu[cpu] += c
        names = latest_names(h)  # each pid's newest record: the name after an exec
        for pid, c, comm, ts in zip(*names, strict=True):
            self._count_proc(pid, cstr(comm), c, ts)
        self.tree.add_batch(arr)

    def add_net(self, net: NetRecords) -> None:
        """Count a batch's packets (the net source; in timestamp order): under their
        TCP connection's owner (its name as of its last packet, unless a newer record
        renamed it), the others under pid 0, ``[net]``."""
        n = len(net)
        if n == 0:
            return
        h = net.rec["h"]
        self.total += n
        self.by_type["net"] = self.by_type.get("net", 0) + n
        cpus = np.bincount(h["cpu"], minlength=self.ncpu).tolist()
        for cpu, c in enumerate(cpus[: self.ncpu]):
            self.per_cpu[cpu] += c
        pids = h["pid"].tolist()
        last = dict(zip(pids, cstrings(h["comm"]).values, strict=True))  # each pid's last comm
        when = dict(zip(pids, h["ts"].tolist(), strict=True))  # a TCP owner's comm: as of then
        for pid, c in Counter(pids).items():  # in order of first packet, as counted one by one
            self._count_proc(pid, shown_comm(last[pid], "net"), c, when[pid])

    def _count_proc(self, pid: int, comm: str, n: int, ts: int | None = None) -> None:
        """Count ``n`` events of ``pid``; ``comm`` is its name at ``ts`` (``h.ts`` ns),
        taken unless a newer name was seen (see :mod:`ringtool.trace.report.proc_names`;
        None: decoded events, which come in order)."""
        row = self.procs.get(pid)
        if row is None:
            self.procs[pid] = [comm, n, ts or 0]
        else:
            if ts is None or ts >= row[2]:
                row[0], row[2] = comm, row[2] if ts is None else ts
            row[1] += n

    def observe_fill(self, fill: Mapping[int, float]) -> None:
        """A sample of the per-CPU ring fill (0..1); the interval keeps the maximum."""
        for cpu, frac in fill.items():
            if frac > self._fill_max.get(cpu, 0.0):
                self._fill_max[cpu] = frac

    def tick(
        self,
        *,
        drops_cpu: list[int] | None = None,
        drops_source: Mapping[str, list[int]] | None = None,
        lost_cpu: Mapping[int, int] | None = None,
        overwritten: Overwritten | None = None,
        syscall_hist: Mapping[int, Mapping[int, int]] | None = None,
        disk_hist: Mapping[int, Mapping[int, int]] | None = None,
        drill: tuple[int | str | None, Mapping[int, Mapping[int, int]]] | None = None,
        cpuwait: CpuWaits | None = None,
        tcp_open: OpenConns | None = None,
        tcp_io: dict[int, tuple[int, int]] | None = None,
        drill_conns: np.ndarray[Any, Any] | None = None,
        now: float | None = None,
    ) -> None:
        """Close an interval: compute rates since the last tick and take the counters.
        ``cpuwait``: the cpuwait source's histograms (cumulative); ``tcp_open``: the
        tcp source's open connections (None: not read); ``tcp_io``, ``drill_conns``:
        its live counters and the drill-down's open connections (taken as they are:
        None where not read).
        ``drill``: what the drill-down is of (a pid or a comm; None: none) and its
        syscall histograms since the trace started (a new one starts its rates
        afresh: 0 in its first interval)."""
        now = time.monotonic() if now is None else now
        dt = max(now - self._mark_time, 1e-6)
        self.rate_total = (self.total - self._mark_total) / dt
        self.history.append(self.rate_total)
        rates: dict[str, float] = {s: 0.0 for s in self.sources}
        for name, c in self.by_type.items():
            src = SOURCE_OF.get(name, name)
            rates[src] = rates.get(src, 0.0) + (c - self._mark_type.get(name, 0)) / dt
        self.rate_source = rates
        self.rate_cpu = [(c - m) / dt for c, m in zip(self.per_cpu, self._mark_cpu, strict=True)]
        for hist, rate in zip(self.history_cpu, self.rate_cpu, strict=True):
            hist.append(rate)
        self._mark_total = self.total
        self._mark_type = dict(self.by_type)
        self._mark_cpu = list(self.per_cpu)
        self._recent_procs = {
            pid: row[1] - self._mark_procs.get(pid, 0) for pid, row in self.procs.items()
        }
        self._mark_procs = {pid: row[1] for pid, row in self.procs.items()}
        self._mark_time = now
        self.fill_cpu, self._fill_max = self._fill_max, {}
        dropped, lost = self.dropped, self.lost
        if drops_cpu is not None:
            prev = self.drops_cpu
            self.drops_cpu = list(drops_cpu)[: self.ncpu] + [0] * (self.ncpu - len(drops_cpu))
            self.drops_cpu_interval = [max(0, a - b) for a, b in zip(self.drops_cpu, prev,
                                                                      strict=True)]  # fmt: skip
        if drops_source is not None:
            self.drops_source_cpu = {k: list(v) for k, v in drops_source.items()}
            self.drops_source = {k: sum(v) for k, v in drops_source.items()}
        if lost_cpu is not None:
            self.lost_cpu = dict(lost_cpu)
        if overwritten is not None:
            self.overwritten = overwritten
        self.dropped_interval = max(0, self.dropped - dropped)
        self.lost_interval = max(0, self.lost - lost)
        if self.dropped_interval or self.lost_interval:
            self.drop_intervals += 1
            self.drop_log.append(DropMark(round(now - self.start, 3), round(time.time(), 3),
                                          self.dropped_interval, self.lost_interval))  # fmt: skip
        if syscall_hist is not None:
            self.sys_hist = {nr: dict(b) for nr, b in syscall_hist.items()}
            self.syscalls = self._rows(self.sys_hist, self._sys_prev, dt)
        if disk_hist is not None:
            self.disk_hist = {dev: dict(b) for dev, b in disk_hist.items()}
        if cpuwait is not None:
            self.cpuwait = cpuwait_stats(cpuwait)
        self.tcp_open, self.tcp_io, self.drill_conns = tcp_open, tcp_io, drill_conns
        if drill is not None:
            key, per_proc = drill
            self.drill_hist = {nr: dict(b) for nr, b in per_proc.items()} if key else {}
            if key != self.drill_key:  # no rate before its first interval
                self.drill_key = key
                self._drill_prev = {nr: sum(b.values()) for nr, b in self.drill_hist.items()}
            self.drill_syscalls = self._rows(self.drill_hist, self._drill_prev, dt)

    def _rows(self, hist: Mapping[int, Mapping[int, int]], prev: dict[int, int],
              dt: float) -> list[SyscallRow]:  # fmt: skip
        """Rows of cumulative histograms; ``prev`` (counts at the last tick) is updated."""
        rows = []
        for nr, buckets in hist.items():
            count = sum(buckets.values())
            rate = (count - prev.get(nr, 0)) / dt
            prev[nr] = count
            rows.append(SyscallRow(nr, self.syscall_name(nr), count, rate, quantile(buckets)))
        return rows

    # --- reading -----------------------------------------------------------------------

    @property
    def dropped(self) -> int:
        return sum(self.drops_cpu)

    @property
    def lost(self) -> int:
        return sum(self.lost_cpu.values())

    @property
    def interval_end(self) -> float:
        """The last tick's time, as seconds since reading started."""
        return self._mark_time - self.start

    @property
    def uptime(self) -> float:
        """Seconds since reading started, until :attr:`end` once the run ended (so the
        summary, the recording's and the output's, says one duration)."""
        return (time.monotonic() if self.end is None else self.end) - self.start

    def proc_rows(self) -> list[tuple[int, str, int, int]]:
        """Every process seen: ``(pid, comm, events, events in the last interval)``,
        in no particular order (the dashboard sorts them by the column chosen)."""
        recent = self._recent_procs
        return [(pid, row[0], row[1], recent.get(pid, 0)) for pid, row in self.procs.items()]

    def top_procs(self, n: int, by: str = "count") -> list[tuple[int, str, int, int]]:
        """``(pid, comm, events, events in the last interval)``, best ``n`` by
        ``count`` (total) or ``rate`` (last interval)."""
        rows = [
            (pid, row[0], row[1], self._recent_procs.get(pid, 0)) for pid, row in self.procs.items()
        ]
        if by == "rate":
            rows.sort(key=lambda r: (-r[3], -r[2]))
        else:
            rows.sort(key=lambda r: (-r[2], r[0]))
        return rows[:n]

    def top_syscalls(self, n: int, by: str = "count", *, waits: bool = True) -> list[SyscallRow]:
        """Best ``n`` syscalls by ``count``, ``rate`` or ``p99``; ``waits`` False: the
        blocking waits (:mod:`ringtool.trace.report.waits`) left out."""
        key: Callable[[SyscallRow], float] = {
            "rate": lambda r: -r.rate,
            "p99": lambda r: -r.p99_ns,
        }.get(by, lambda r: -r.count)
        rows = self.syscalls if waits else [r for r in self.syscalls if not is_wait(r.name)]
        return sorted(rows, key=key)[:n]

    def set_ordering(self, merge_stats: Any) -> None:
        """Record a timestamp merge's counts (a ``ringtool.merge.MergeStats``):
        events delivered older than the one before them, in total and per buffer
        (buffer i is CPU ring i), the largest such lateness, and what a reorder
        window holds now."""
        self.ordering = {
            "out_of_order": merge_stats.out_of_order,
            "out_of_order_per_buffer": list(merge_stats.out_of_order_per_buffer),
            "max_lateness_us": round(merge_stats.max_lateness_ns / 1000, 1),
            "held": merge_stats.held,
        }


__all__ = ["DROP_LOG", "DropMark", "SyscallRow", "TraceStats"]
