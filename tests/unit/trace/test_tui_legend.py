"""The dashboard explains itself and keeps slow work apart from waiting: every key it
handles has a help line, every column header of every panel a legend line; the
blocking waits are marked and left out of the p99 sort unless asked; the header says
that the syscalls source's events are slow syscalls (no kernel)."""

from __future__ import annotations

import io
import os

from rich.console import Console, Group
from rich.table import Table

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.trace.dashboard import tui_panels as panels
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.dashboard.tui_cost import cost_panel
from ringtool.trace.dashboard.tui_events import events_table
from ringtool.trace.dashboard.tui_help import KEY_LABELS, KEYS, LEGEND
from ringtool.trace.dashboard.tui_view import ACTIONS, ALIASES, SCROLL_KEYS, ViewState
from ringtool.trace.reading.cost import CostFigures, CostReport, ProgCost
from ringtool.trace.reading.latency_buckets import bucket_of
from ringtool.trace.report.stats import TraceStats
from tests.helpers.stats import new_stats
from tests.helpers.tui import frame

NAMES = {0: "read", 7: "poll", 61: "wait4", 202: "futex", 230: "clock_nanosleep", 257: "openat"}


def _stats() -> TraceStats:
    st = new_stats(syscall_name=lambda nr: NAMES.get(nr, f"sys_{nr}"))
    st._count_proc(os.getpid(), "me", 5)
    ms, s = bucket_of(2_000_000), bucket_of(29_000_000_000)
    hist = {0: {ms: 50}, 257: {bucket_of(3_000): 900}, 61: {s: 3}, 202: {s: 40},
            230: {s: 8}, 7: {s: 5}}  # fmt: skip
    st.tick(syscall_hist=hist, now=1.0)
    st.tick(syscall_hist=hist, drill=(os.getpid(), hist), now=2.0)
    return st


def _tui(w: int, h: int, st: TraceStats) -> tuple[TraceTui, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, color_system=None)
    tui = TraceTui(Decoder(load_layout()), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    tui.stats(st)
    return tui, buf


def test_every_key_handled_has_a_help_line() -> None:
    handled = {*ACTIONS, *SCROLL_KEYS, *ALIASES, "q", "Q"}
    written = {token for key, _ in KEYS for token in key.split()}
    missing = {k for k in handled if KEY_LABELS.get(k, k) not in written}
    assert not missing, f"keys the dashboard handles without a help line: {missing}"
    assert {"c", "n", "w"} <= handled  # cost, drill-down by name, the waits in the p99 sort
    view = ViewState()
    for key, method in ACTIONS.items():  # every one is a method of the view
        assert callable(getattr(view, method)), key


def _headers(renderable: object) -> set[str]:
    """The column headers of a table (or of the tables in a group), sort marks cut."""
    if isinstance(renderable, Group):
        return {h for r in renderable.renderables for h in _headers(r)}
    if not isinstance(renderable, Table):  # a note above a table
        return set()
    return {str(c.header).rstrip("▼▲") for c in renderable.columns}


def _cost(note: str | None) -> CostReport:
    f = CostFigures(1.0, [ProgCost("open x", 7, "x", 10, 1000, 1.0)], user_s=0.1, sys_s=0.1)
    return CostReport(note is None, note, f, f)


def test_every_column_header_has_a_legend_line() -> None:
    st = _stats()
    st.export = {"exported": 1, "export_dropped": 0, "export_dropped_per_cpu": [0, 0]}
    view = ViewState(drill=os.getpid())
    event = {"type": "open", "ts": 0.0, "pid": 1, "uid": 0, "comm": "x", "filename": "/f",
             "flags": 0, "ret": 3}  # fmt: skip
    tables = [
        panels.cpu_table(st, view, 2, 200), panels.procs_table(st, view, 5),
        panels.syscalls_table(st, view, 5), panels.sources_table(st, view, ["exec"], [], 5),
        panels.drill_table(st, view, 5, 120),
        events_table([event], view, 5, uid=True),
        cost_panel(_cost(None), 20), cost_panel(_cost("no statistics"), 20),
    ]  # fmt: skip
    headers = set().union(*(_headers(t) for t in tables))
    assert {"XDROP", "EV/S TREND", "LATENCY (log2)", "UID", "EV/IV", "FILL%"} <= headers
    legend = {name for name, _ in LEGEND}
    assert headers <= legend, f"columns without a legend line: {headers - legend}"


def test_p99_sort_leaves_the_blocking_waits_out_unless_asked() -> None:
    tui, buf = _tui(80, 24, _stats())
    for _ in range(2):
        tui.view.key("s")  # count -> rate -> p99
    text = frame(tui, buf)
    assert "top syscalls (by p99, no waits: w)" in text
    rows = [ln[:40] for ln in text.splitlines()]
    assert any(ln.split()[:1] == ["read"] for ln in rows)  # slow work: a 2 ms read
    for wait in ("futex", "wait4", "clock_nanosleep", "poll"):
        assert not any(ln.split()[:1] == [wait] for ln in rows), wait
    tui.view.key("w")  # with them: the 29 s waits first, marked
    text = frame(tui, buf)
    assert "top syscalls (by p99)" in text
    first = next(ln for ln in text.splitlines() if "(wait)" in ln)
    assert "29s" in first or "29.0s" in first or "30s" in first, first


def test_waits_are_marked_in_every_sort_and_in_the_drill_down() -> None:
    tui, buf = _tui(120, 40, _stats())
    text = frame(tui, buf)  # sorted by count: every syscall, the waits marked
    assert "futex (wait)" in text and "openat (wait)" not in text
    tui, buf = _tui(100, 40, _stats())  # below 120: the drill-down alone in its row
    tui.view.drill = os.getpid()
    text = frame(tui, buf)
    assert "top syscalls" not in text and "futex (wait)" in text  # the drill-down's rows


def test_header_names_the_slow_syscalls() -> None:
    st = _stats()
    st.by_type["syscall"] = 50  # slow-syscall events
    st.tick(now=3.0)
    tui, buf = _tui(120, 40, st)
    text = frame(tui, buf)
    line = text.splitlines()[0]
    assert "slow syscalls " in line and "  syscalls " not in line
    assert "slow syscalls" in text.split("sources")[1]  # the sources table names it so


def test_footer_lists_the_cost_key() -> None:
    for view in (ViewState(), ViewState(paused=True), ViewState(drill=5, tree=True)):
        assert " c cost" in panels.footer(view).plain[:80]  # in 80 columns
