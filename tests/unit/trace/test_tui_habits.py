"""The dashboard without a kernel: what it keeps (per-process events, pause, scroll
position, selection), exited processes, the tree, habit keys and mouse reports, and
what fits 80x24."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.records import Records
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.dashboard.tui_exits import EXITING, GONE, LIVE, Exits
from ringtool.trace.dashboard.tui_keys import KeyParser
from ringtool.trace.dashboard.tui_tree import tree_rows
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.report.stats import TraceStats
from tests.helpers.stats import LAYOUT, new_stats
from tests.helpers.tui import frame

OPEN, EXIT = LAYOUT.type_id("open"), LAYOUT.type_id("exit")


def _records(rows: list[tuple[int, bytes, int, bytes]], typ: int = OPEN) -> np.ndarray[Any, Any]:
    """Records of ``(pid, comm, ts, path)``."""
    arr = np.zeros(len(rows), dtype=LAYOUT.event)
    for i, (pid, comm, ts, path) in enumerate(rows):
        arr[i]["h"]["type"], arr[i]["h"]["pid"], arr[i]["h"]["tid"] = typ, pid, pid
        arr[i]["h"]["comm"], arr[i]["h"]["ts"], arr[i]["data"] = comm, ts, path
    return arr


def _tui(w: int, h: int) -> tuple[TraceTui, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, color_system=None)
    tui = TraceTui(Decoder(LAYOUT, realtime_offset_ns=0), console=console, input_fd=-1)
    tui.start(["exec", "open"], [])
    return tui, buf


def _frame(tui: TraceTui, buf: io.StringIO) -> str:
    return frame(tui, buf)


def _feed(tui: TraceTui, st: TraceStats, arr: np.ndarray[Any, Any]) -> None:
    st.add_batch(arr)
    tui.batch(Records(arr))


def test_quiet_process_events_survive_a_busy_one_in_filter_and_drill_down() -> None:
    tui, buf = _tui(120, 40)
    st = new_stats()
    ts = 1
    for batch in range(20):  # 20 x 3,000 opens of the busy one, 1 open of the quiet one
        rows = [(10, b"busy", ts + i, b"/busy") for i in range(3000)]
        rows.insert(1500, (20, b"quiet", ts + 1500, b"/quiet-%d" % batch))
        _feed(tui, st, _records(rows))
        ts += 3000
    st.tick(now=1.0)
    tui.stats(st)
    for key in "/quiet":
        tui.view.key(key)
    tui.view.key("enter")
    text = _frame(tui, buf)
    assert "recent exec/open/net (20)" in text
    assert "/quiet-19" in text and "/busy" not in text
    tui.view.key("enter")
    text = _frame(tui, buf)
    assert "process 20: recent exec/open/net (20)" in text and "/quiet-19" in text


def test_pause_freezes_every_panel_and_scrolling_back_holds() -> None:
    tui, buf = _tui(120, 40)
    st = new_stats()
    _feed(tui, st, _records([(7, b"one", i + 1, b"/f%02d" % i) for i in range(40)]))
    st.tick(now=1.0)
    tui.stats(st)
    _frame(tui, buf)
    tui.view.key("tab")
    for _ in range(5):
        tui.view.key("up")  # 5 back from the newest
    before = _frame(tui, buf)
    assert "/f34" in before and "/f39" not in before
    _feed(tui, st, _records([(7, b"one", 100 + i, b"/g%02d" % i) for i in range(10)]))
    after = _frame(tui, buf)  # new events arrived: the same rows stay
    assert "/f34" in after and "/g" not in after
    tui.view.key("end")  # follow the newest again
    assert "/g09" in _frame(tui, buf)
    tui.view.key("p")
    paused = _frame(tui, buf)
    _feed(tui, st, _records([(8, b"two", 500 + i, b"/h%02d" % i) for i in range(10)]))
    st.tick(now=2.0)
    tui.stats(st)
    still = _frame(tui, buf)
    assert "/h0" not in still and " two " not in still
    assert still.splitlines()[2:] == paused.splitlines()[2:]  # (the header's clock moves)
    tui.view.key("p")
    assert "/h09" in _frame(tui, buf)


def test_exited_process_dimmed_then_gone_unless_kept() -> None:
    ex = Exits(EXIT, linger=3.0)
    ex.add_batch(_records([(5, b"x", 100, b"")], EXIT), now=10.0)
    assert ex.state(5, 100, 11.0) == EXITING
    assert ex.state(5, 100, 13.5) == GONE
    assert ex.state(5, 101, 13.5) == LIVE  # a newer record: the pid is in use again
    assert ex.state(6, 0, 13.5) == LIVE
    tui, buf = _tui(120, 40)
    st = new_stats()
    _feed(tui, st, _records([(5, b"leaver", 1, b"/a"), (6, b"stayer", 2, b"/b")]))
    tui.exits.linger = 0.0
    _feed(tui, st, _records([(5, b"leaver", 3, b"")], EXIT))
    st.tick(now=1.0)
    tui.stats(st)
    text = _frame(tui, buf)
    assert "stayer" in text and "leaver" not in text
    assert "top processes  1/1" in text
    tui.view.key("e")  # keep them
    assert "leaver" in _frame(tui, buf)


def test_a_lost_exit_is_found_in_proc(tmp_path: Path) -> None:
    """An exit record dropped by a full ring: the quiet process is looked for in /proc."""
    ex = Exits(EXIT, linger=3.0)
    ex.proc = str(tmp_path)
    (tmp_path / "5").mkdir()
    ex.sweep([(5, 10), (6, 11), (0, 12)], now=1.0)
    assert ex.state(5, 10, 9.0) == LIVE and ex.state(0, 12, 9.0) == LIVE
    assert ex.state(6, 11, 2.0) == EXITING and ex.state(6, 11, 9.0) == GONE


def test_selection_follows_the_pid() -> None:
    v, st = ViewState(), new_stats()
    st.add_batch(_records([(p, b"c%d" % p, p, b"") for p in (1, 2, 3) for _ in range(p)]))
    st.tick(now=1.0)
    assert [r[0] for r in v.procs(st, 10)[0]] == [3, 2, 1]
    v.key("j")
    assert v.sel_pid == 2
    v.key("I")
    assert [r[0] for r in v.procs(st, 10)[0]] == [1, 2, 3] and v.sel == 1
    v.key(">")  # EV/IV: all 3 rows change places, the selection stays on 2
    v.procs(st, 10)
    assert v._pids[v.sel] == 2
    for key in ["f3", "c", "3", "enter"]:  # search: the next whose comm has "c3"
        v.key(key)
    assert v.sel_pid == 3


def test_tree_rows() -> None:
    rows = [(1, "init", 5, 0), (30, "grandchild", 9, 0), (20, "child", 1, 0), (40, "other", 2, 0)]
    tree = tree_rows(rows, {20: 1, 30: 20, 1: 30})  # (a cycle: 1's parent is 30)
    assert sorted(r[0] for r in tree) == [1, 20, 30, 40]  # each row once, no loop
    tree = tree_rows(rows, {20: 1, 30: 20})
    assert [(r[0], r[1]) for r in tree] == [(1, "init"), (20, "└─child"),
                                            (30, "  └─grandchild"), (40, "other")]  # fmt: skip


def test_habit_keys_and_mouse_reports() -> None:
    p = KeyParser()
    keys = p.feed(b"\x1bOR\x1b[14~\x1b[15~\x1b[21~\x1b[<0;12;7M\x1b[<0;12;7m\x1b[<65;1;1M"
                  b"\x1b[<2;3;3M")  # fmt: skip
    assert keys == ["f3", "f4", "f5", "f10", "click:12:7", "down"]
    v = ViewState()
    assert v.key("f10") is True
    v.key("f4")
    assert v.editing == "" and not v.searching
    v.key("esc")
    v.filter = "abc"
    v.key("esc")  # the main view: Esc clears the filter
    assert v.filter == ""


@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40)])
def test_nothing_wraps_and_the_return_value_stays(w: int, h: int) -> None:
    tui, buf = _tui(w, h)
    st = new_stats()
    long_path = b"/very/long/directory/" + b"d" * 150 + b"/LC_NUMERIC"
    arr = _records([(9, b"locale-reader", 5, long_path)])
    arr["ret"] = 3
    _feed(tui, st, arr)
    st.tick(drops_cpu=[1055, 0], now=4000.0)  # a burst: the per-CPU title grows
    tui.stats(st)
    text = _frame(tui, buf)
    lines = text.splitlines()
    assert len(lines) == h and all(len(ln) <= w for ln in lines)
    assert lines[3].split()[:2] == ["CPU", "FILL%"], text  # the title kept to one line
    row = next(ln for ln in lines if "LC_NUMERIC" in ln)
    assert "…" in row and row.rstrip().endswith("/LC_NUMERIC … = 3"), row  # flags cut first


def test_startup_says_what_it_does() -> None:
    buf = io.StringIO()
    console = Console(file=buf, width=80, height=24, color_system=None)
    tui = TraceTui(Decoder(LAYOUT), console=console, input_fd=-1)
    with tui:
        tui.step("compiling bpf/trace_open.c (source open)")
        console.print(tui.render())
        text = buf.getvalue()
        assert "ringtool trace: starting" in text and "compiling bpf/trace_open.c" in text
        assert tui._ticker is not None  # redrawn while BCC compiles
        tui.start(["open"], [])
        assert tui._ticker is None
