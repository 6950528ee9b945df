"""The dashboard's tables drawn by :class:`PanelTable` look exactly as rich's ``Table``
draws them (every character and its style, line by line), for any cells, widths and
row styles; the dashboard's own tables take the fast path; a table it does not draw
itself (a cell of two lines, a table too wide) is rich's."""

from __future__ import annotations

import io
import os

from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from ringtool.trace.dashboard import tui_panels as panels
from ringtool.trace.dashboard.tui_events import events_table
from ringtool.trace.dashboard.tui_table import PanelTable
from ringtool.trace.dashboard.tui_view import ViewState
from tests.helpers.stats import new_stats

Line = list[tuple[str, Style]]


class RichDrawn:
    """``table`` drawn by rich's own ``Table`` code."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        return Table.__rich_console__(self.table, console, options)


def _console(width: int) -> Console:
    return Console(file=io.StringIO(), width=width, height=50, force_terminal=True,
                   color_system="truecolor")  # fmt: skip


def _lines(console: Console, renderable: Table | RichDrawn) -> list[Line]:
    """Each line's characters by style (runs of one style joined: only what shows)."""
    out = []
    for line in console.render_lines(renderable, console.options, pad=True):
        segs = [Segment(s.text, s.style or Style.null()) for s in line]
        out.append([(s.text, s.style or Style.null()) for s in Segment.simplify(segs)])
    return out


def _same(table: Table, width: int) -> bool:
    console = _console(width)
    fast = _lines(console, table)
    return fast == _lines(console, RichDrawn(table)) and len(fast) > 0


WORDS = ["0", "12.3k", "rt_bench_aaaaaa", "/dev/null O_RDONLY = 3 (openat)", "", "x" * 70,
         "café", "日本語テキスト", "a [b] c", "[bold]x[/]", "01:12:52.927", ":smile:",
         "  lead", "trail  ", "\x1b[31mred"]  # fmt: skip
STYLES = ["", "reverse", "dim", "red", "reverse dim", "bold cyan"]
column = st.tuples(st.sampled_from(["PID", "COMM", "EVENTS▼", "EV/S", "DETAIL", "X"]),
                   st.sampled_from(["left", "right"]),
                   st.one_of(st.none(), st.integers(1, 12)))  # fmt: skip
cell = st.tuples(st.sampled_from(WORDS), st.sampled_from(["str", "data", "wait", "styled"]))


def _cell(text: str, kind: str) -> str | Text:
    if kind == "str":
        return text
    if kind == "data":
        return panels.data(text)
    if kind == "wait":  # spans of their own, as the syscalls table's waits
        return Text.assemble(text, (" (wait)", "dim"), style="dim", no_wrap=True)
    return Text(text, style="bold", no_wrap=True)


@settings(max_examples=300, deadline=None)
@given(
    cols=st.lists(column, min_size=1, max_size=6),
    rows=st.lists(st.tuples(st.lists(cell, min_size=6, max_size=6), st.sampled_from(STYLES)),
                  max_size=8),
    flex=st.integers(-1, 5),
    title=st.sampled_from(["per CPU", "t" * 150, "top processes  3/40"]),
    caption=st.booleans(),
    width=st.sampled_from([24, 40, 59, 60, 61, 80, 120, 200]),
)  # fmt: skip
def test_drawn_as_rich_draws_it(cols: list[tuple[str, str, int | None]],
                                rows: list[tuple[list[tuple[str, str]], str]], flex: int,
                                title: str, caption: bool, width: int) -> None:  # fmt: skip
    named = [(f"{name}{i}", justify, *([w] if w else [])) for i, (name, justify, w)
             in enumerate(cols)]  # fmt: skip
    table = panels.table(title, *named, flex=named[flex][0] if 0 <= flex < len(named) else "")  # type: ignore[arg-type]
    for cells, style in rows:
        table.add_row(*(_cell(t, k) for t, k in cells[: len(named)]), style=style)
    if caption:
        table.caption, table.caption_justify = panels.data("children: none"), "left"
    assert _same(table, width)


def _dashboard_tables(width: int) -> list[tuple[Table, int]]:
    """The dashboard's tables in a terminal ``width`` wide, each with its own width
    (half the terminal, the recent events all of it)."""
    stats = new_stats(syscall_name=lambda nr: {0: "read", 230: "clock_nanosleep"}.get(nr, "x"))
    for pid in range(100, 112):
        stats._count_proc(pid, f"proc{pid}", pid)
    stats._count_proc(os.getpid(), "me", 5)
    stats.tick(syscall_hist={0: {3: 40}, 230: {20: 5}}, now=1.0)
    view = ViewState()
    events = [{"ts": 1.5 + i, "pid": 100 + i, "uid": 0, "comm": "cat", "type": "open",
               "path": "/etc/passwd", "ret": 3, "flags": 0} for i in range(5)]  # fmt: skip
    half = width // 2
    return [
        (panels.cpu_table(stats, view, 4, width), half), (panels.procs_table(stats, view, 8), half),
        (panels.syscalls_table(stats, view, 6), half),
        (panels.sources_table(stats, view, ["exec", "open"], ["a note"], 6), half),
        (events_table(events, view, 8, width=width), width),
    ]  # fmt: skip


def test_the_dashboard_tables_take_the_fast_path() -> None:
    for terminal in (80, 120, 200):
        for table, width in _dashboard_tables(terminal):
            console = _console(width)
            assert isinstance(table, PanelTable)
            assert table._fast(console, console.options) is not None, (width, table.title)
            assert _same(table, width), (width, table.title)


def test_what_it_does_not_draw_rich_draws() -> None:
    two_lines = panels.table("t", ("A", "left"), ("B", "right", 5))
    two_lines.add_row("one\ntwo", "3")  # more than one line: rich wraps it
    too_wide = panels.table("t", *((f"C{i}", "right", 9) for i in range(8)))
    too_wide.add_row(*("123456789" for _ in range(8)))  # 88 columns in 40: rich shrinks
    for table, width in ((two_lines, 40), (too_wide, 40)):
        console = _console(width)
        assert isinstance(table, PanelTable) and table._fast(console, console.options) is None
        assert _same(table, width)
