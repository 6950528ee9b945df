"""The dashboard's cost panel (key ``c``): what tracing costs, over the last interval.

One row per BPF program of the trace (:class:`ringtool.trace.reading.cost.CostReport`'s
``interval`` figures), busiest first: its source and event, ``bpftool``'s program id,
its runs, average run time and share of one CPU; then all programs together and
ringtool's own process (user and system CPU). When there are more programs than rows,
the last row says how many are left out (``…``). The kernel's BPF run-time statistics
are on only while the panel is open (:attr:`ringtool.trace.dashboard.tui.TraceTui.wants_cost`):
until an interval was measured with them on throughout, the panel says they warm up
rather than showing zeros. Without the statistics the panel says why and still shows
ringtool's CPU. Numbers are scaled
(:mod:`ringtool.trace.units`), so the panel fits 80 columns.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ringtool.trace.dashboard.tui_panels import data, table
from ringtool.trace.reading.cost import CostReport
from ringtool.trace.units import count, duration_ns

TITLE = "cost of tracing (c closes)"
#: What the panel says until an interval was measured with the statistics on throughout.
WARMING = ("BPF run-time statistics warming up: on while this panel is open, "
           "figures after the first whole interval")  # fmt: skip


def _pct(value: float) -> str:
    return f"{value:.2f}%" if value < 100 else f"{value:.0f}%"


def cost_panel(report: CostReport | None, rows: int) -> RenderableType:
    """The panel in at most ``rows`` lines (title and column heads included)."""
    t = table(f"{TITLE}: BPF run time per program, last interval", ("PROGRAM", "left"),
              ("ID", "right", 6), ("RUNS", "right", 5), ("AVG", "right", 6),
              ("CPU", "right", 6), flex="PROGRAM")  # fmt: skip
    if report is None:
        t.add_row(data("waiting for the first interval…"), "", "", "", "")
        return t
    f = report.interval
    body = max(1, rows - 3)  # title, head, its rule
    fixed = 2  # all programs, ringtool
    if report.note is not None:
        return Group(_note(f"BPF run time not measured: {report.note}"), _own_table(report))
    if not report.whole:
        return Group(_note(WARMING), _own_table(report))
    progs = sorted(f.programs, key=lambda p: (-p.run_time_ns, -p.run_cnt, p.program))
    room = max(0, body - fixed)
    shown = progs if len(progs) <= room else progs[: max(0, room - 1)]
    for p in shown:
        t.add_row(data(p.program), str(p.id), count(p.run_cnt), duration_ns(p.avg_ns),
                  _pct(p.cpu_pct))  # fmt: skip
    if len(shown) < len(progs):
        t.add_row(Text(f"… {len(progs) - len(shown)} more (quieter) programs", style="dim"),
                  "", "", "", "")  # fmt: skip
    t.add_row(Text("all BPF programs", style="bold"), "", count(f.bpf_run_cnt),
              duration_ns(f.bpf_avg_ns), _pct(f.bpf_cpu_pct))  # fmt: skip
    t.add_row(Text(_own_label(report), style="bold"), "", "", "", _pct(f.self_cpu_pct))
    return t


def _own_label(report: CostReport) -> str:
    f = report.interval
    return f"ringtool process (user {f.user_s:.2f}s sys {f.sys_s:.2f}s)"


def _note(note: str) -> Text:
    return Text(note, style="yellow", overflow="ellipsis", no_wrap=False)


def _own_table(report: CostReport) -> Table:
    t = table(TITLE, ("WHAT", "left"), ("CPU", "right", 6), flex="WHAT")
    t.add_row(Text(_own_label(report), style="bold"), _pct(report.interval.self_cpu_pct))
    return t


__all__ = ["TITLE", "WARMING", "cost_panel"]
