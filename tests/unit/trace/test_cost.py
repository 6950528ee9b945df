"""The cost figures, the summary's cost line and object, and the cost panel at 80×24
and 120×40, on hand-made readings (no kernel)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.dashboard.tui_cost import cost_panel
from ringtool.trace.dashboard.tui_help import KEYS
from ringtool.trace.reading.cost import CostFigures, CostReport, CostSampler, ProgCost
from ringtool.trace.report.stats_json import stats_record, summary_record
from ringtool.trace.writers.output_columns import format_summary
from tests.helpers.stats import new_stats


def _figures(n: int, seconds: float = 2.0) -> CostFigures:
    progs = [
        ProgCost(f"open syscalls:sys_enter_prog_number_{i:02}_" + "_long" * 25, 100 + i,
                 "syscalls__sys_e", run_cnt=1000 * (i + 1), run_time_ns=250_000 * (i + 1),
                 seconds=seconds)
        for i in range(n)
    ]  # fmt: skip
    return CostFigures(seconds, progs, user_s=0.3, sys_s=0.1)


def _report(n: int = 3, note: str | None = None) -> CostReport:
    return CostReport(note is None, note, _figures(n, 1.0), _figures(n, 2.0))


def test_figures() -> None:
    f = _figures(2)
    p = f.programs[1]
    assert p.avg_ns == 250.0  # 500 µs over 2000 runs
    assert p.cpu_pct == pytest.approx(100 * 500_000 / 2e9)
    assert f.bpf_run_cnt == 3000 and f.bpf_run_time_ns == 750_000
    assert f.bpf_avg_ns == 250.0
    assert f.self_cpu_pct == pytest.approx(20.0)  # 0.4 s of CPU in 2 s
    assert ProgCost("x", 1, "x", 0, 0, 1.0).avg_ns == 0.0  # no runs: no division


def test_summary_line_and_record() -> None:
    st = new_stats()
    st.cost = _report(3)
    line = next(x for x in format_summary(st, None) if x.startswith("cost:"))
    assert "3 programs" in line and "6000 runs" in line and "avg 250 ns" in line
    assert "ringtool 20.0% CPU" in line
    rec = summary_record(st)["cost"]
    assert rec["bpf_stats"] is True and rec["bpf_run_cnt"] == 6000
    assert [p["id"] for p in rec["programs"]] == [100, 101, 102]
    assert rec["programs"][2]["avg_ns"] == 250.0 and rec["self_cpu_pct"] == 20.0
    st.cost = _report(3, note="no CAP_SYS_ADMIN")
    line = next(x for x in format_summary(st, None) if x.startswith("cost:"))
    assert "not measured: no CAP_SYS_ADMIN" in line


def test_stats_line_has_the_interval() -> None:
    st = new_stats()
    assert "cost" not in stats_record(st)  # nothing sampled yet
    st.cost = CostReport(True, None, _figures(2, 1.0), _figures(3, 4.0))
    rec = stats_record(st)["cost"]
    assert rec == {"bpf_stats": True, "bpf_stats_s": 1.0, "seconds": 1.0, "bpf_run_cnt": 3000,
                   "bpf_avg_ns": 250.0, "bpf_cpu_pct": 0.075, "self_cpu_pct": 40.0}  # fmt: skip


def _render(report: CostReport | None, w: int, h: int) -> list[str]:
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, force_terminal=True, color_system=None)
    tui = TraceTui(Decoder(load_layout()), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    st = new_stats()
    st.cost = report
    tui.stats(st)
    assert tui.view.key("c") is False and tui.view.cost
    console.print(tui.render(), height=h)
    return buf.getvalue().splitlines()


@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40)])
def test_panel_fits_and_cuts_with_an_ellipsis(w: int, h: int) -> None:
    lines = _render(_report(40), w, h)
    assert len(lines) == h and all(len(line) <= w for line in lines)
    text = "\n".join(lines)
    assert "cost of tracing" in text and "all BPF programs" in text
    assert "ringtool process" in text
    assert "more (quieter) programs" in text  # 40 programs never fit: the rest is said
    assert "139" in text  # the busiest program's id is first
    assert "…" in text  # long program names are cut visibly


def test_panel_shows_every_program_when_they_fit_and_the_note() -> None:
    text = "\n".join(_render(_report(3), 120, 40))
    assert "more (quieter)" not in text
    assert all(str(i) in text for i in (100, 101, 102))
    text = "\n".join(_render(_report(3, note="the kernel has no BPF_ENABLE_STATS"), 80, 24))
    assert "not measured: the kernel has no BPF_ENABLE_STATS" in text
    assert "ringtool process" in text
    assert "waiting" in "\n".join(_render(None, 80, 24))


def test_c_toggles_and_esc_closes_the_panel() -> None:
    tui = TraceTui(Decoder(load_layout()), console=Console(file=io.StringIO()), input_fd=-1)
    for key, shown in (("c", True), ("c", False), ("c", True), ("esc", False)):
        tui.view.key(key)
        assert tui.view.cost is shown, key
    assert any(k == "c" for k, _ in KEYS)  # the help overlay lists it


def test_panel_alone_in_few_rows() -> None:
    buf = io.StringIO()
    Console(file=buf, width=80, force_terminal=True, color_system=None).print(
        cost_panel(_report(10), 8)
    )
    assert len(buf.getvalue().splitlines()) <= 8


def test_sampler_left_off_samples_this_process_only() -> None:
    ticks = iter([10.0, 12.0, 13.0])
    sampler = CostSampler({"x y": 999}, off="--no-cost", clock=lambda: next(ticks))
    assert not sampler.enabled
    sum(i * i for i in range(300_000))  # some CPU time of our own
    first = sampler.sample()
    second = sampler.sample()
    sampler.close()
    assert first.bpf_stats is False and first.note == "--no-cost"
    sampler.turn(True)  # --no-cost: never on, not even when asked
    assert not sampler.enabled
    assert first.interval.programs == [] and first.interval.seconds == 2.0
    assert second.interval.seconds == 1.0 and second.total.seconds == 3.0
    assert first.interval.user_s + first.interval.sys_s > 0
    assert "not measured: --no-cost" in second.line()


def _tui() -> TraceTui:
    return TraceTui(Decoder(load_layout()), console=Console(file=io.StringIO()), input_fd=-1)


def test_the_dashboard_wants_the_statistics_only_with_its_cost_panel() -> None:
    tui = _tui()
    assert tui.wants_cost is False  # the main view: the statistics stay off
    for key, wanted in (("c", True), ("c", False), ("c", True), ("esc", False)):
        tui.view.key(key)
        assert tui.wants_cost is wanted, key
    tui.view.key("c")
    tui.view.key("?")  # the help over the panel: it is still open
    assert tui.wants_cost is True


def test_the_panel_says_the_statistics_warm_up_rather_than_zeros() -> None:
    f = CostFigures(1.0, [], user_s=0.1, sys_s=0.0, bpf_s=0.0)
    for report in (CostReport(False, None, f, f, whole=False),
                   CostReport(True, None, f, f, whole=False)):  # fmt: skip
        text = " ".join("\n".join(_render(report, 80, 24)).split())
        assert "warming up" in text and "ringtool process" in text
        assert "all BPF programs" not in text  # no row of zeros
    text = "\n".join(_render(_report(3), 80, 24))  # a whole interval: the figures
    assert "warming up" not in text and "all BPF programs" in text


def test_figures_cover_the_time_the_statistics_were_on() -> None:
    progs = [ProgCost("p", 1, "p", run_cnt=100, run_time_ns=50_000_000, seconds=0.5)]
    f = CostFigures(2.0, progs, user_s=0.0, sys_s=0.0, bpf_s=0.5)
    assert f.measured_s == 0.5 and f.bpf_cpu_pct == pytest.approx(10.0)  # 50 ms of 0.5 s
    report = CostReport(True, None, f, f, whole=False)
    assert report.record()["bpf_stats_s"] == 0.5 and report.record()["seconds"] == 2.0
    assert "while measured (0.5s of 2.0s;" in report.line()
    off = CostFigures(2.0, [], user_s=0.0, sys_s=0.0, bpf_s=0.0)
    rec = CostReport(False, None, off, off).record()
    assert rec["bpf_stats"] is False and rec["bpf_stats_s"] == 0.0
    assert rec["note"] == "the statistics were off (--cost turns them on)"
    assert "BPF run time not measured: the statistics were off (--cost turns them on)" in (
        CostReport(False, None, off, off).line()
    )
