"""What tracing costs the machine: ringtool's BPF programs' run time and its own CPU.

:class:`CostSampler` turns the kernel's BPF run-time statistics on and off while it
runs (:meth:`CostSampler.turn`: the fd of :func:`ringtool.kernel.bpf_stats.enable_stats`
opened and closed, never the sysctl): while they are on, every run of every BPF
program on the machine pays two clock reads, so they are on only while someone looks
(the dashboard's cost panel, or ``--cost``). Each :meth:`CostSampler.sample` reads
every program's ``run_cnt``/``run_time_ns`` and this process's CPU time
(``getrusage``: every thread, user and system). A :class:`CostReport` has the figures
over the last interval (the dashboard's cost panel) and since the sampler opened (the
summary): per program its run count, average run time and CPU share, where a CPU share
is in percent of one CPU (100 = one CPU busy for the whole time, as top's %CPU). The
BPF figures count only the time the statistics were on (``bpf_s``), and a span where
they were off throughout has none (not zeros). The kernel counts a run's time from the
program's entry to its return on the CPU it ran on, so the BPF figures are the
programs' own time, not the tracepoints' or the ring's wakeups.

When the statistics cannot be turned on (a kernel before 5.8, no CAP_SYS_ADMIN) the
sampler still reports ringtool's CPU, and :attr:`CostReport.note` says why the BPF
figures are missing. Reading costs one ``bpf(2)`` per program per sample: nothing per
event.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ringtool.errors import RingtoolError
from ringtool.kernel import bpf_stats
from ringtool.kernel.bpf import close_fd
from ringtool.kernel.bpf_stats import ProgRunStats
from ringtool.programs.loaded import LoadedProgram


def program_label(func: str) -> str:
    """A BCC function's hook as ``category:event``: ``tracepoint__syscalls__sys_enter_openat``
    -> ``syscalls:sys_enter_openat``; a raw tracepoint's ``raw_tracepoint__sys_enter`` ->
    ``raw_syscalls:sys_enter``, ``raw_tracepoint__sched_switch`` -> ``sched:sched_switch``
    (a raw one's name has no category: the syscall hooks' and the scheduler's are
    known, any other is ``raw:NAME``); any other function keeps its name."""
    if func.startswith("tracepoint__"):
        return func.removeprefix("tracepoint__").replace("__", ":", 1)
    if func.startswith("raw_tracepoint__"):
        event = func.removeprefix("raw_tracepoint__")
        if event in ("sys_enter", "sys_exit"):
            return "raw_syscalls:" + event
        return ("sched:" if event.startswith("sched_") else "raw:") + event
    return func


def program_fds(sources: Mapping[str, LoadedProgram], more: Mapping[str, int]) -> dict[str, int]:
    """Every loaded BPF program of BCC objects ``sources`` (source name -> its object):
    ``"source category:event"`` (:func:`program_label`) -> its fd, then ``more``. One
    program on several hooks (the program cache loads byte-identical functions once)
    is one entry, its hooks' events joined by ``+``: ``"open
    syscalls:sys_exit_creat+sys_exit_open"`` (its figures are all of theirs)."""
    hooks: dict[int, tuple[str, list[str]]] = {}  # fd -> (the first label, more events)
    for source, obj in sources.items():
        for fn in obj.funcs.values():
            label = f"{source} {program_label(fn.name.decode())}"
            if fn.fd in hooks:
                hooks[fn.fd][1].append(label.rpartition(":")[2])
            else:
                hooks[fn.fd] = (label, [])
    out = {"+".join([label, *more_events]): fd for fd, (label, more_events) in hooks.items()}
    out.update(more)
    return out


@dataclass(frozen=True, slots=True)
class ProgCost:
    """One program's runs over ``seconds`` of wall time (``program``: the trace source
    and the function, ``name``: the kernel's 15-character name, ``id``: its id as
    ``bpftool prog show id`` takes it)."""

    program: str
    id: int
    name: str
    run_cnt: int
    run_time_ns: int
    seconds: float

    @property
    def avg_ns(self) -> float:
        """Average run time (ns); 0 without runs."""
        return self.run_time_ns / self.run_cnt if self.run_cnt else 0.0

    @property
    def cpu_pct(self) -> float:
        """Run time in percent of one CPU's time over ``seconds``."""
        return 100 * self.run_time_ns / (self.seconds * 1e9) if self.seconds > 0 else 0.0

    def record(self) -> dict[str, Any]:
        return {
            "program": self.program, "id": self.id, "name": self.name,
            "run_cnt": self.run_cnt, "run_time_ns": self.run_time_ns,
            "avg_ns": round(self.avg_ns, 1), "cpu_pct": round(self.cpu_pct, 3),
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class CostFigures:
    """All programs and this process over one span of ``seconds``."""

    seconds: float
    programs: list[ProgCost]
    user_s: float  # this process's CPU time in user mode
    sys_s: float  # and in the kernel on its behalf (its syscalls), not BPF runs
    #: the seconds of the span the BPF statistics were on, which the programs' figures
    #: cover (None: all of it)
    bpf_s: float | None = None

    @property
    def measured_s(self) -> float:
        """The seconds the BPF figures cover."""
        return self.seconds if self.bpf_s is None else self.bpf_s

    @property
    def bpf_run_cnt(self) -> int:
        return sum(p.run_cnt for p in self.programs)

    @property
    def bpf_run_time_ns(self) -> int:
        return sum(p.run_time_ns for p in self.programs)

    @property
    def bpf_avg_ns(self) -> float:
        runs = self.bpf_run_cnt
        return self.bpf_run_time_ns / runs if runs else 0.0

    @property
    def bpf_cpu_pct(self) -> float:
        """The programs' run time in percent of one CPU over :attr:`measured_s`."""
        s = self.measured_s
        return 100 * self.bpf_run_time_ns / (s * 1e9) if s > 0 else 0.0

    @property
    def self_cpu_pct(self) -> float:
        return 100 * (self.user_s + self.sys_s) / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class CostReport:
    """The last interval's figures and those since the start; ``bpf_stats`` says
    whether the kernel's statistics were on at all since the start (``total.bpf_s``
    says how long); ``note`` why they never can be (``--no-cost``, the kernel refused),
    else ``hint`` what turns them on. ``whole``: they were on for the whole last
    interval (else its BPF figures are partial or none: the cost panel says they warm
    up)."""

    bpf_stats: bool
    note: str | None
    interval: CostFigures
    total: CostFigures
    whole: bool = True
    hint: str = "--cost turns them on"

    @property
    def unmeasured(self) -> str | None:
        """Why the summary has no BPF figures (None: it has)."""
        if self.note is not None:
            return self.note
        return None if self.bpf_stats else f"the statistics were off ({self.hint})"

    def record(self) -> dict[str, Any]:
        """The ``cost`` object of the ``--json`` summary (figures since the start)."""
        t = self.total
        return {
            "bpf_stats": self.bpf_stats, "note": self.unmeasured, "seconds": round(t.seconds, 3),
            "bpf_stats_s": round(t.measured_s if self.bpf_stats else 0.0, 3),
            "bpf_run_cnt": t.bpf_run_cnt, "bpf_run_time_ns": t.bpf_run_time_ns,
            "bpf_avg_ns": round(t.bpf_avg_ns, 1), "bpf_cpu_pct": round(t.bpf_cpu_pct, 3),
            "self_user_s": round(t.user_s, 3), "self_sys_s": round(t.sys_s, 3),
            "self_cpu_pct": round(t.self_cpu_pct, 2),
            "programs": [p.record() for p in t.programs],
        }  # fmt: skip

    def interval_record(self) -> dict[str, Any]:
        """The ``cost`` object of a ``--json`` stats line: the last interval's totals
        (the summary's :meth:`record` has each program's)."""
        i = self.interval
        return {
            "bpf_stats": self.bpf_stats and bool(i.measured_s), "seconds": round(i.seconds, 3),
            "bpf_stats_s": round(i.measured_s if self.bpf_stats else 0.0, 3),
            "bpf_run_cnt": i.bpf_run_cnt, "bpf_avg_ns": round(i.bpf_avg_ns, 1),
            "bpf_cpu_pct": round(i.bpf_cpu_pct, 3), "self_cpu_pct": round(i.self_cpu_pct, 2),
        }  # fmt: skip

    def line(self) -> str:
        """The summary's one line (figures since the start)."""
        t = self.total
        own = f"ringtool {t.self_cpu_pct:.1f}% CPU (user {t.user_s:.2f}s, sys {t.sys_s:.2f}s)"
        why = self.unmeasured
        if why is not None:
            return f"cost: {own}; BPF run time not measured: {why}"
        return (
            f"cost: BPF {t.bpf_cpu_pct:.2f}% CPU while measured ({t.measured_s:.1f}s of "
            f"{t.seconds:.1f}s; {len(t.programs)} programs, {t.bpf_run_cnt} runs, "
            f"avg {t.bpf_avg_ns:.0f} ns); {own}"
        )


@dataclass(frozen=True, slots=True)
class _Reading:
    """One sample: ``progs`` are the counts summed over the spans the statistics were
    on, ``on_s`` those spans' seconds, ``on`` whether they are on now and ``turns``
    how often they were turned on or off so far."""

    at: float
    user_s: float
    sys_s: float
    progs: dict[str, ProgRunStats]
    on_s: float
    on: bool
    turns: int


class CostSampler:
    """Samples the cost of ``programs`` (label -> BPF program fd; the fds stay the
    caller's and must stay open until :meth:`close`). The kernel's run-time statistics
    are on while :meth:`turn` says so (from the start with ``on``); ``off`` gives a
    reason never to turn them on (then, as when the kernel refuses, only this process's
    CPU is sampled and :attr:`note` says why); ``hint`` says what turns them on (for a
    summary where they never were). :meth:`close` (or the process ending) turns this
    share off again. Not thread-safe: one caller samples."""

    def __init__(
        self,
        programs: Mapping[str, int],
        *,
        on: bool = False,
        off: str | None = None,
        hint: str = "--cost turns them on",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._programs = dict(programs)
        self._clock = clock
        self._hint = hint
        self._fd = -1
        self.note: str | None = off
        self._summed: dict[str, ProgRunStats] = {}  # counts over the spans they were on
        self._base: dict[str, ProgRunStats] = {}  # the kernel's counts when turned on
        self._on_at = 0.0
        self._on_s = 0.0  # the seconds of the spans before the current one
        self._turns = 0
        self.turn(on)
        self._turns = 0
        self._first = self._prev = self._read()

    @property
    def enabled(self) -> bool:
        """The statistics are on by this sampler."""
        return self._fd >= 0

    def turn(self, on: bool) -> None:
        """Turn the statistics on or off (a no-op when they already are; on is a no-op
        once :attr:`note` says they cannot be)."""
        if on == self.enabled or (on and self.note is not None):
            return
        if on:
            try:
                self._fd = bpf_stats.enable_stats()
            except RingtoolError as exc:
                self.note = f"{exc} (the trace runs without them)"
                return
            self._base, self._on_at = self._kernel(), self._clock()
        else:
            self._summed, self._on_s = self._counted(), self._on_s + self._clock() - self._on_at
            close_fd(self._fd)  # bpf_stats_release: the static key's decrement
            self._fd = -1
        self._turns += 1

    def _kernel(self) -> dict[str, ProgRunStats]:
        progs: dict[str, ProgRunStats] = {}
        for label, fd in self._programs.items():
            try:
                progs[label] = bpf_stats.prog_run_stats(fd)
            except RingtoolError:  # closed since (its source was disabled)
                continue
        return progs

    def _counted(self) -> dict[str, ProgRunStats]:
        """The counts over the spans on, the current one up to now included."""
        if not self.enabled:
            return self._summed
        out = dict(self._summed)
        for label, late in self._kernel().items():
            early = self._base.get(label)
            if early is None or early.id != late.id:
                continue
            had = out.get(label)
            cnt, ns = (had.run_cnt, had.run_time_ns) if had is not None else (0, 0)
            out[label] = ProgRunStats(late.id, late.name, ns + late.run_time_ns - early.run_time_ns,
                                      cnt + late.run_cnt - early.run_cnt, 0)  # fmt: skip
        return out

    def _read(self) -> _Reading:
        use = resource.getrusage(resource.RUSAGE_SELF)
        at = self._clock()
        on_s = self._on_s + (at - self._on_at if self.enabled else 0.0)
        return _Reading(at, use.ru_utime, use.ru_stime, self._counted(), on_s, self.enabled,
                        self._turns)  # fmt: skip

    def sample(self) -> CostReport:
        """Read now: the figures since the last sample and since the start."""
        now = self._read()
        prev = self._prev
        whole = prev.on and now.on and prev.turns == now.turns
        report = CostReport(now.on_s > 0, self.note, _figures(prev, now),
                            _figures(self._first, now), whole, self._hint)  # fmt: skip
        self._prev = now
        return report

    def close(self) -> None:
        """Turn this share of the statistics off (idempotent)."""
        self.turn(False)


def _figures(a: _Reading, b: _Reading) -> CostFigures:
    seconds = b.at - a.at
    on_s = b.on_s - a.on_s
    progs = []
    if on_s > 0:
        for label, late in b.progs.items():
            early = a.progs.get(label)
            if early is not None and early.id != late.id:
                continue
            cnt, ns = (early.run_cnt, early.run_time_ns) if early is not None else (0, 0)
            progs.append(ProgCost(label, late.id, late.name, late.run_cnt - cnt,
                                  late.run_time_ns - ns, on_s))  # fmt: skip
    return CostFigures(seconds, progs, b.user_s - a.user_s, b.sys_s - a.sys_s, on_s)


__all__ = ["CostFigures", "CostReport", "CostSampler", "ProgCost", "program_fds", "program_label"]
