"""What tracing costs the machine: ringtool's BPF programs' run time and its own CPU.

:class:`CostSampler` turns the kernel's BPF run-time statistics on
(:func:`ringtool.kernel.bpf_stats.enable_stats`: an fd, never the sysctl) for as long
as it is open, and each :meth:`CostSampler.sample` reads every program's
``run_cnt``/``run_time_ns`` and this process's CPU time (``getrusage``: every thread,
user and system). A :class:`CostReport` has the figures over the last interval (the
dashboard's cost panel) and since the sampler opened (the summary): per program its run
count, average run time and CPU share, where a CPU share is in percent of one CPU
(100 = one CPU busy for the whole time, as top's %CPU). The kernel counts a run's
time from the program's entry to its return on the CPU it ran on, so the BPF figures
are the programs' own time, not the tracepoints' or the ring's wakeups.

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
    ``raw_syscalls:sys_enter`` (the syscall hooks are the only raw ones); any other
    function keeps its name."""
    if func.startswith("tracepoint__"):
        return func.removeprefix("tracepoint__").replace("__", ":", 1)
    if func.startswith("raw_tracepoint__"):
        return "raw_syscalls:" + func.removeprefix("raw_tracepoint__")
    return func


def program_fds(sources: Mapping[str, LoadedProgram], more: Mapping[str, int]) -> dict[str, int]:
    """Every loaded BPF program of BCC objects ``sources`` (source name -> its object):
    ``"source category:event"`` (:func:`program_label`) -> its fd, then ``more``."""
    out = {
        f"{source} {program_label(fn.name.decode())}": fn.fd
        for source, obj in sources.items()
        for fn in obj.funcs.values()
    }
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
        return 100 * self.bpf_run_time_ns / (self.seconds * 1e9) if self.seconds > 0 else 0.0

    @property
    def self_cpu_pct(self) -> float:
        return 100 * (self.user_s + self.sys_s) / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True, slots=True)
class CostReport:
    """The last interval's figures and those since the start; ``bpf_stats`` says
    whether the kernel's statistics were on (else ``note`` says why, and the programs'
    counts are 0)."""

    bpf_stats: bool
    note: str | None
    interval: CostFigures
    total: CostFigures

    def record(self) -> dict[str, Any]:
        """The ``cost`` object of the ``--json`` summary (figures since the start)."""
        t = self.total
        return {
            "bpf_stats": self.bpf_stats, "note": self.note, "seconds": round(t.seconds, 3),
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
            "bpf_stats": self.bpf_stats, "seconds": round(i.seconds, 3),
            "bpf_run_cnt": i.bpf_run_cnt, "bpf_avg_ns": round(i.bpf_avg_ns, 1),
            "bpf_cpu_pct": round(i.bpf_cpu_pct, 3), "self_cpu_pct": round(i.self_cpu_pct, 2),
        }  # fmt: skip

    def line(self) -> str:
        """The summary's one line (figures since the start)."""
        t = self.total
        own = f"ringtool {t.self_cpu_pct:.1f}% CPU (user {t.user_s:.2f}s, sys {t.sys_s:.2f}s)"
        if not self.bpf_stats:
            return f"cost: {own}; BPF run time not measured: {self.note}"
        return (
            f"cost: BPF {t.bpf_cpu_pct:.2f}% CPU ({len(t.programs)} programs, "
            f"{t.bpf_run_cnt} runs, avg {t.bpf_avg_ns:.0f} ns); {own}"
        )


@dataclass(frozen=True, slots=True)
class _Reading:
    at: float
    user_s: float
    sys_s: float
    progs: dict[str, ProgRunStats]


class CostSampler:
    """Samples the cost of ``programs`` (label -> BPF program fd; the fds stay the
    caller's and must stay open until :meth:`close`). Opening it turns the kernel's
    run-time statistics on (unless ``off`` gives a reason not to: then, as when the
    kernel refuses, only this process's CPU is sampled and :attr:`note` says why);
    :meth:`close` (or the process ending) turns this share off again. Not thread-safe:
    one caller samples."""

    def __init__(
        self,
        programs: Mapping[str, int],
        *,
        off: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._programs = dict(programs)
        self._clock = clock
        self._fd = -1
        self.note: str | None = off
        if off is None:
            try:
                self._fd = bpf_stats.enable_stats()
            except RingtoolError as exc:
                self.note = f"{exc} (the trace runs without them)"
        self._first = self._prev = self._read()

    @property
    def enabled(self) -> bool:
        """The statistics are on by this sampler."""
        return self._fd >= 0

    def _read(self) -> _Reading:
        progs: dict[str, ProgRunStats] = {}
        if self._fd >= 0:
            for label, fd in self._programs.items():
                try:
                    progs[label] = bpf_stats.prog_run_stats(fd)
                except RingtoolError:  # closed since (its source was disabled)
                    continue
        use = resource.getrusage(resource.RUSAGE_SELF)
        return _Reading(self._clock(), use.ru_utime, use.ru_stime, progs)

    def sample(self) -> CostReport:
        """Read now: the figures since the last sample and since the start."""
        now = self._read()
        report = CostReport(
            self.enabled, self.note, _figures(self._prev, now), _figures(self._first, now)
        )
        self._prev = now
        return report

    def close(self) -> None:
        """Turn this share of the statistics off (idempotent)."""
        if self._fd >= 0:
            close_fd(self._fd)  # bpf_stats_release: the static key's decrement
            self._fd = -1


def _figures(a: _Reading, b: _Reading) -> CostFigures:
    seconds = b.at - a.at
    progs = []
    for label, late in b.progs.items():
        early = a.progs.get(label)
        if early is None or early.id != late.id:
            continue
        progs.append(
            ProgCost(label, late.id, late.name, late.run_cnt - early.run_cnt,
                     late.run_time_ns - early.run_time_ns, seconds)
        )  # fmt: skip
    return CostFigures(seconds, progs, b.user_s - a.user_s, b.sys_s - a.sys_s)


__all__ = ["CostFigures", "CostReport", "CostSampler", "ProgCost", "program_fds", "program_label"]
