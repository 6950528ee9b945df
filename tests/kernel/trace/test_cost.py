"""What tracing costs, on the real kernel: the cost sampler's per-program figures
against ``bpftool prog show`` over the same interval, the sampler turning the kernel's
BPF run-time statistics on and off while it runs, a default trace leaving them off
(``--cost`` on, the dashboard while its cost panel is open), and the statistics back to
what they were after the dashboard's ``q``, Ctrl-C and ``kill -TERM``.

Whether the statistics are collected is seen on a probe program of this test's own
(a tracepoint on ``getppid``): its ``run_cnt`` grows under calls only while they are
on. ``kernel.bpf_stats_enabled`` is read too: ringtool must never write it."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from ringtool.kernel import bpf_stats
from ringtool.programs.loader import import_bcc
from ringtool.trace.dashboard.tui_cost import cost_panel
from ringtool.trace.reading.cost import CostReport, CostSampler
from ringtool.trace.reading.options import TraceOptions
from ringtool.trace.units import count
from tests.helpers.tmux import RUN, Terminal, needs_tmux
from tests.helpers.trace import Trace, traced

pytestmark = pytest.mark.kernel


def _bpftool() -> dict[int, dict[str, Any]]:
    """Every program ``bpftool -j prog show`` lists, by id (run counters 0 when absent:
    bpftool leaves them out while they are 0)."""
    done = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    return {p["id"]: p for p in json.loads(done.stdout)}


def _counters(progs: dict[int, dict[str, Any]], pid: int) -> tuple[int, int]:
    p = progs[pid]
    return int(p.get("run_cnt", 0)), int(p.get("run_time_ns", 0))


def test_sampler_figures_agree_with_bpftool(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("x")
    with traced(TraceOptions(events=("open", "exec", "syscalls"))) as s:
        sampler = CostSampler(s.prog_fds(), on=True)
        try:
            assert sampler.enabled, sampler.note
            outer0 = _bpftool()
            sampler.sample()  # the interval starts
            inner0 = _bpftool()
            for _ in range(3000):
                target.open().close()  # openat: the open source's busiest program
            inner1 = _bpftool()
            report = sampler.sample()  # and ends
            outer1 = _bpftool()
        finally:
            sampler.close()
    progs = {p.program: p for p in report.interval.programs}
    assert len(progs) >= 10  # every program of the three sources
    openat = progs["open syscalls:sys_exit_openat"]
    seen = []
    for p in report.interval.programs:
        lo = [b - a for a, b in zip(_counters(inner0, p.id), _counters(inner1, p.id), strict=True)]
        hi = [b - a for a, b in zip(_counters(outer0, p.id), _counters(outer1, p.id), strict=True)]
        # the sampler's interval lies between bpftool's inner and outer readings
        assert lo[0] <= p.run_cnt <= hi[0], (p.program, lo, p.run_cnt, hi)
        assert lo[1] <= p.run_time_ns <= hi[1], (p.program, lo, p.run_time_ns, hi)
        seen.append((p.program, p.id, lo[0], p.run_cnt, hi[0], lo[1], p.run_time_ns, hi[1]))
    print("\nprogram id bpftool-inner ringtool bpftool-outer (run_cnt, then run_time_ns)")
    for row in seen:
        print(*row)
    assert openat.run_cnt >= 3000 and openat.run_time_ns > 0
    assert openat.avg_ns == openat.run_time_ns / openat.run_cnt
    # the panel draws these figures: the busiest program's id and its runs
    buf = io.StringIO()
    Console(file=buf, width=120, force_terminal=True, color_system=None).print(
        cost_panel(report, 40)
    )
    busiest = max(report.interval.programs, key=lambda p: p.run_time_ns)
    row = next(line for line in buf.getvalue().splitlines() if f" {busiest.id} " in line)
    assert count(busiest.run_cnt) in row.split()


# --- the statistics' state before, during and after a run -----------------------------


class _Probe:
    """A tracepoint program on ``getppid`` loaded by this test (stats off by it)."""

    def __init__(self) -> None:
        bcc = import_bcc()
        self.obj = bcc.BPF(text=b"TRACEPOINT_PROBE(syscalls, sys_enter_getppid) { return 0; }")
        self.fd = self.obj.funcs[b"tracepoint__syscalls__sys_enter_getppid"].fd

    def collecting(self) -> bool:
        """Do runs add to the counters now? (500 calls: any count means yes.)"""
        before = bpf_stats.prog_run_stats(self.fd).run_cnt
        for _ in range(500):
            os.getppid()
        return bpf_stats.prog_run_stats(self.fd).run_cnt > before

    def state(self) -> tuple[int | None, bool]:
        return bpf_stats.sysctl_enabled(), self.collecting()


@pytest.fixture
def probe() -> Iterator[_Probe]:
    p = _Probe()
    try:
        yield p
    finally:
        p.obj.cleanup()


def _holds_stats_fd(pid: int) -> bool:
    """Has process ``pid`` (or a child of it) a BPF_ENABLE_STATS fd open?"""
    return _stats_holder(pid) is not None


def _stats_holder(pid: int) -> int | None:
    """Process ``pid`` or the child of it that has a BPF_ENABLE_STATS fd open."""
    pids = [pid, *map(int, subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                          text=True).stdout.split())]  # fmt: skip
    for p in pids:
        try:
            fds = os.listdir(f"/proc/{p}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{p}/fd/{fd}") == "anon_inode:bpf-stats":
                    return p
            except OSError:
                continue
    return None


def _not_during(pid: int, probe: _Probe, before: tuple[int | None, bool]) -> None:
    assert not _holds_stats_fd(pid), "ringtool holds a bpf-stats fd while nobody looks"
    assert probe.state() == before


def _during(pid: int, probe: _Probe, before: tuple[int | None, bool]) -> None:
    assert _holds_stats_fd(pid), "ringtool holds no bpf-stats fd while tracing"
    sysctl, collecting = probe.state()
    assert sysctl == before[0], "ringtool wrote kernel.bpf_stats_enabled"
    assert collecting, "the statistics are not collected while ringtool traces"


def _after(probe: _Probe, before: tuple[int | None, bool]) -> None:
    deadline = time.monotonic() + 10  # the kernel releases the fd as the process exits
    while probe.state() != before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert probe.state() == before, "the statistics are not what they were before"


def test_close_turns_the_statistics_off_in_a_live_process(probe: _Probe) -> None:
    before = probe.state()
    sampler = CostSampler({}, on=True)
    assert sampler.enabled and probe.collecting()
    sampler.close()
    sampler.close()  # idempotent
    assert probe.state() == before  # at once: the process still runs


def _probe_runs(report: CostReport) -> int | None:
    """The probe's runs in the report's last interval (None: not measured)."""
    return next((p.run_cnt for p in report.interval.programs if p.program == "probe"), None)


def test_sampler_turns_the_statistics_on_and_off_while_it_runs(probe: _Probe) -> None:
    sysctl = bpf_stats.sysctl_enabled()
    sampler = CostSampler({"probe": probe.fd})
    try:
        assert not sampler.enabled and not _holds_stats_fd(os.getpid())  # off by default
        for _ in range(500):
            os.getppid()
        off = sampler.sample()  # an interval off throughout: not measured, no zeros
        assert _probe_runs(off) is None and off.bpf_stats is False and not off.whole
        assert off.interval.measured_s == 0 and off.record()["bpf_stats_s"] == 0
        sampler.turn(True)
        assert sampler.enabled and _holds_stats_fd(os.getpid())  # the fd is the mechanism
        assert probe.collecting()
        warm = sampler.sample()  # turned on during the interval: measured, not whole
        assert not warm.whole and (_probe_runs(warm) or 0) >= 500
        for _ in range(500):
            os.getppid()
        on = sampler.sample()  # on throughout: the runs grow
        assert on.whole and (_probe_runs(on) or 0) >= 500
        assert 0 < on.interval.measured_s == on.interval.seconds
        sampler.turn(False)
        assert not sampler.enabled and not _holds_stats_fd(os.getpid())
        sampler.sample()  # the interval it was turned off in
        for _ in range(500):
            os.getppid()  # counted by the kernel only if someone else holds them on
        gone = sampler.sample()
        assert _probe_runs(gone) is None and not gone.whole  # off: not measured
        total = gone.total  # the summary: the runs while on, over the time they were on
        assert total.measured_s < total.seconds and gone.bpf_stats
        assert next(p.run_cnt for p in total.programs if p.program == "probe") >= 1000
        assert bpf_stats.sysctl_enabled() == sysctl  # the sysctl is never written
    finally:
        sampler.close()


@needs_tmux
@pytest.mark.parametrize("how", ["q", "C-c", "TERM"])
def test_dashboard_exit_restores_the_statistics(how: str, probe: _Probe) -> None:
    before = probe.state()
    term = Terminal(f"{RUN} trace --interval 1; echo EXITED rc=$?; sleep 60", 80, 24)
    try:
        term.wait_for("per CPU", "q quit")
        _not_during(term.shell_pid(), probe, before)  # the cost panel is closed
        term.send("c")
        term.wait_for("cost of tracing", "warming up")  # a whole interval is not yet
        screen = term.wait_for("cost of tracing", "all BPF programs", "ringtool process",
                               "sys_exit_openat")  # fmt: skip
        assert all(len(line) <= 80 for line in screen.splitlines())
        _during(term.shell_pid(), probe, before)
        if how == "q":  # closing the panel turns them off, opening it on again
            term.send("c")
            term.wait_for("per CPU", "q quit")
            _not_during(term.shell_pid(), probe, before)
            term.send("c")
            term.wait_for("cost of tracing")
        holder = _stats_holder(term.shell_pid())
        assert holder is not None
        if how == "TERM":
            os.kill(holder, signal.SIGTERM)  # kill -TERM
        else:
            term.send(how)
        screen = term.wait_for("EXITED rc=", "cost: BPF")
        assert "EXITED rc=0" in screen, screen  # Ctrl-C ends the trace normally too
    finally:
        term.close()
    _after(probe, before)


def test_sigterm_restores_the_statistics_and_the_summary_has_the_cost(probe: _Probe) -> None:
    before = probe.state()
    trace = Trace("--json", "--events", "open,exec,syscalls", "--cost")
    _during(trace.proc.pid, probe, before)
    trace.signal(signal.SIGTERM)
    lines, _ = trace.finish()
    _after(probe, before)
    summary = json.loads(lines[-1])
    assert summary["type"] == "summary"
    cost = summary["cost"]
    assert cost["bpf_stats"] is True and cost["note"] is None
    assert 0 < cost["bpf_stats_s"] <= cost["seconds"]  # on for the whole run
    assert cost["bpf_run_cnt"] == sum(p["run_cnt"] for p in cost["programs"]) > 0
    assert cost["self_user_s"] > 0 and cost["seconds"] > 0
    names = {p["program"] for p in cost["programs"]}
    assert "open syscalls:sys_exit_openat" in names and "syscalls raw_syscalls:sys_enter" in names


def test_a_default_trace_leaves_the_statistics_off(probe: _Probe) -> None:
    before = probe.state()
    trace = Trace("--json", "-d", "2")
    _not_during(trace.proc.pid, probe, before)
    lines, _ = trace.finish()
    summary = json.loads(lines[-1])
    assert summary["type"] == "summary"
    cost = summary["cost"]
    assert cost["bpf_stats"] is False and cost["bpf_stats_s"] == 0 and cost["programs"] == []
    assert "--cost" in cost["note"] and cost["self_user_s"] > 0


def test_no_cost_leaves_the_statistics_alone(probe: _Probe) -> None:
    before = probe.state()
    trace = Trace("--json", "--events", "open", "--no-cost", "-d", "1.5")
    assert not _holds_stats_fd(trace.proc.pid)
    assert probe.state() == before
    lines, _ = trace.finish()
    cost = json.loads(lines[-1])["cost"]
    assert cost["bpf_stats"] is False and cost["note"] == "--no-cost"
    assert cost["programs"] == [] and cost["self_user_s"] > 0


def test_prog_run_stats_says_what_is_wrong_with_an_fd(tmp_path: Path, probe: _Probe) -> None:
    from ringtool.errors import ArgumentError, BpfSyscallError
    from ringtool.kernel import bpf

    fd = bpf.map_create(bpf.MapType.ARRAY, key_size=4, value_size=8, max_entries=1)
    try:
        with pytest.raises(ArgumentError, match=r"not a BPF program.*bpf-map"):
            bpf_stats.prog_run_stats(fd)
    finally:
        os.close(fd)
    with open(tmp_path / "f", "w") as f, pytest.raises(ArgumentError, match="not a BPF program"):
        bpf_stats.prog_run_stats(f.fileno())
    with pytest.raises(BpfSyscallError, match="fd 9999"):  # not open
        bpf_stats.prog_run_stats(9999)
    got = bpf_stats.prog_run_stats(probe.fd)
    assert got.name == "syscalls__sys_e" and got.id > 0  # the kernel's 15-character name
