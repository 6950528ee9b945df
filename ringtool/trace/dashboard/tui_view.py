"""The state of the ``ringtool trace`` dashboard and what each key does to it.

:class:`ViewState` holds what the user chose (pause, help overlay, filter, sort column and
order of the process table, the sort of the syscalls table, which table the arrows
scroll, scroll positions, the process shown in a drill-down) and :meth:`ViewState.key`
applies one key name (:mod:`ringtool.trace.dashboard.tui_keys`). A key that means nothing in the
current state is ignored. :meth:`ViewState.procs` and :meth:`ViewState.events` pick, filter and
sort the rows a frame shows and keep the scroll positions inside them; the panels
(:mod:`ringtool.trace.dashboard.tui_panels`) only draw what these return.

Scrolling: in the process table a selected row (the one ``Enter`` opens) moves with
the arrows (``j``/``k``), ``PgUp``/``PgDn`` (one page: the rows the last frame showed)
and ``Home``/``End`` (``g``/``G``); the window follows it. The selection is a process
(its pid): it stays on it across sorts, filters and refreshes (when the process leaves
the rows, on the row where it was). The event tail scrolls back from the newest event
(``Up`` is older; ``End`` follows the newest again) and, scrolled back, stays on the
events it shows while new ones arrive. ``Tab`` says which table the keys scroll.

Exited processes (:mod:`ringtool.trace.dashboard.tui_exits`) are dimmed for a few seconds, then
left out of the rows unless ``keep_exited`` (``--keep-exited``, key ``e``). ``F5``
shows the rows as a process tree (:mod:`ringtool.trace.dashboard.tui_tree`).
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ringtool.trace.dashboard.tui_exits import GONE, LIVE, Exits
from ringtool.trace.dashboard.tui_tree import tree_rows
from ringtool.trace.report.proc_names import shown_comm
from ringtool.trace.report.stats import TraceStats

#: The process table's columns, in order (``<``/``>`` move the sort along them).
PROC_COLUMNS = ("PID", "COMM", "EVENTS", "EV/IV")
#: Columns sorted biggest first unless inverted (the others: smallest/A first).
_DESCENDING = frozenset({"EVENTS", "EV/IV"})
#: The syscalls table's sorts (``s`` cycles them).
SORTS = ("count", "rate", "p99")
ProcRow = tuple[int, str, int, int]  # pid, comm, events, events in the last interval

#: Every key and what it does (the help overlay draws this list).
KEYS = (
    ("q F10", "quit"),
    ("? F1", "this help (any key closes it)"),
    ("p", "pause the display (counting goes on)"),
    ("/ F4", "filter by comm (Enter applies, Esc clears)"),
    ("F3", "search: select the next process whose comm has it"),
    ("< >  F6", "sort the processes by the column left/right"),
    ("I", "invert the sort order"),
    ("F5", "process tree (children under their parent)"),
    ("e", "keep exited processes (else they leave after a few s)"),
    ("s", "sort the syscalls: count / rate / p99"),
    ("Tab", "scroll the processes or the recent events"),
    ("↑ ↓ k j  PgUp PgDn", "move in the table"),
    ("Home End  g G", "first / last row (End: follow the newest events)"),
    ("Enter", "drill down into the selected process"),
    ("Esc", "close help or cost panel, leave drill-down, clear filter"),
    ("c", "cost of tracing: BPF run time per program, own CPU"),
    ("mouse", "click a row: select it; click a column header: sort by it"),
)
#: Keys that are other names of a key (vim's, htop's).
ALIASES = {"j": "down", "k": "up", "g": "home", "G": "end", "f10": "q", "f4": "/"}


@dataclass
class ViewState:
    """What the dashboard shows (see the module doc)."""

    paused: bool = False
    help: bool = False
    cost: bool = False  # the cost panel (ringtool.trace.dashboard.tui_cost) instead of the tables
    filter: str = ""
    editing: str | None = None  # the filter (or search) being typed, or None
    searching: bool = False  # what is typed is a search (F3), not the filter
    sort: int = 0  # index into SORTS (the syscalls table)
    proc_col: int = 2  # index into PROC_COLUMNS
    invert: bool = False
    focus: str = "procs"  # or "events"
    sel: int = 0  # selected row of the process table
    top: int = 0  # first row of the process table shown
    back: int = 0  # events scrolled back from the newest
    drill: int | None = None  # the pid of the drill-down, or None
    sel_pid: int | None = None  # the process selected (the selection follows it)
    tree: bool = False  # F5: the rows as a process tree
    keep_exited: bool = False
    exits: Exits | None = None
    dim: set[int] = field(default_factory=set)  # pids shown exiting (the last frame's)
    gone: list[int] = field(default_factory=list)  # pids left out as exited (last frame)
    _anchor: tuple[float, int] | None = None  # the newest event shown, scrolled back
    _moved: bool = False  # the events were scrolled since the last frame
    page_procs: int = 1  # rows the last frame showed
    page_events: int = 1
    _pids: list[int] = field(default_factory=list)  # the process rows, in order
    _stats: TraceStats | None = None  # of the last frame (procs)
    _comms: list[str] = field(default_factory=list)
    _n_events: int = 0

    # --- keys --------------------------------------------------------------------------

    def key(self, key: str) -> bool:
        """Apply one key (a :mod:`ringtool.trace.dashboard.tui_keys` name); True means quit."""
        if self.editing is not None:
            self._edit(key)
            return False
        key = ALIASES.get(key, key)
        if key in ("q", "Q"):
            return True
        if self.help:  # any other key closes the help
            self.help = False
            return False
        action = {
            "?": self._help, "f1": self._help, "esc": self._escape, "p": self._pause,
            "P": self._pause, "s": self._next_sort, "S": self._next_sort,
            "/": self._start_filter, "<": self._left, ">": self._right, "f6": self._right,
            "I": self._invert, "tab": self._tab, "enter": self._enter, "f3": self._search,
            "f5": self._tree, "e": self._keep, "c": self._cost,
        }.get(key)  # fmt: skip
        if action is not None:
            action()
        else:
            self._scroll(key)
        return False

    def _edit(self, key: str) -> None:
        assert self.editing is not None
        if self.searching and key in ("enter", "esc", "f3"):
            text, self.editing, self.searching = self.editing, None, False
            if key != "esc":
                self.find(text)
        elif key == "enter":
            self.filter, self.editing = self.editing, None
            self.top = self.back = 0
        elif key == "esc":
            self.filter, self.editing = "", None
        elif key == "backspace":
            self.editing = self.editing[:-1]
        elif len(key) == 1:  # a printable character (named keys are ignored)
            self.editing += key

    def _help(self) -> None:
        self.help = True

    def _cost(self) -> None:
        self.cost = not self.cost

    def _escape(self) -> None:
        if self.cost:
            self.cost = False
        elif self.drill is not None:
            self.drill = None
        else:  # the main view: Esc clears the filter
            self.filter = ""

    def _search(self) -> None:
        self.editing, self.searching = "", True

    def _tree(self) -> None:
        self.tree = not self.tree

    def _keep(self) -> None:
        self.keep_exited = not self.keep_exited

    def find(self, text: str) -> None:
        """Select the next process (after the selected one, wrapping) whose comm has
        ``text`` (htop's F3)."""
        self._refresh()
        comms = self._comms
        n = len(comms)
        for i in range(1, n + 1):
            j = (self.sel + i) % n
            if text in comms[j]:
                self._select(j)
                return

    def _select(self, row: int) -> None:
        self.sel = max(0, min(row, len(self._pids) - 1))
        self.sel_pid = self._pids[self.sel] if self._pids else None
        self._follow()

    def click(self, row: int | None, column: int | None) -> None:
        """A mouse click on the process table: on row ``row`` of those shown (selects
        it), or on the header of column ``column`` (sorts by it; again: inverts)."""
        if column is not None and 0 <= column < len(PROC_COLUMNS):
            if column == self.proc_col:
                self.invert = not self.invert
            else:
                self.proc_col, self.invert = column, False
        elif row is not None:
            self._refresh()
            self.focus = "procs"
            if 0 <= self.top + row < len(self._pids):
                self._select(self.top + row)

    def _pause(self) -> None:
        self.paused = not self.paused

    def _next_sort(self) -> None:
        self.sort = (self.sort + 1) % len(SORTS)

    def _start_filter(self) -> None:
        self.editing = self.filter

    def _left(self) -> None:
        self.proc_col = (self.proc_col - 1) % len(PROC_COLUMNS)

    def _right(self) -> None:
        self.proc_col = (self.proc_col + 1) % len(PROC_COLUMNS)

    def _invert(self) -> None:
        self.invert = not self.invert

    def _tab(self) -> None:
        self.focus = "events" if self.focus == "procs" else "procs"

    def _enter(self) -> None:
        self._refresh()  # keys since the last frame may have changed the filter or sort
        if self.focus == "procs" and 0 <= self.sel < len(self._pids):
            self.drill = self._pids[self.sel]
            self.back = 0

    def _refresh(self) -> None:
        """The process list as the next frame will have it (what Enter and the
        arrows act on), from the stats of the last frame."""
        if self._stats is not None:
            self.procs(self._stats, self.page_procs)

    def _scroll(self, key: str) -> None:
        self._refresh()
        if self.focus == "procs":
            page, last = max(1, self.page_procs), len(self._pids) - 1
            moves = {"up": -1, "down": 1, "pgup": -page, "pgdn": page}
            if key not in (*moves, "home", "end"):
                return
            sel = {"home": 0, "end": last}.get(key, self.sel + moves.get(key, 0))
            self._select(max(0, min(sel, last)))
        else:
            self._moved = True
            page = max(1, self.page_events)
            moves = {"up": 1, "down": -1, "pgup": page, "pgdn": -page}
            if key in moves:
                self.back += moves[key]
            elif key == "home":
                self.back = self._n_events
            elif key == "end":
                self.back = 0
            self.back = max(0, min(self.back, self._n_events - page))

    def _follow(self) -> None:
        """Move the process window so that the selected row is in it."""
        page = max(1, self.page_procs)
        if self.sel < self.top:
            self.top = self.sel
        elif self.sel >= self.top + page:
            self.top = self.sel - page + 1
        self.top = max(0, min(self.top, len(self._pids) - page))

    # --- rows --------------------------------------------------------------------------

    @property
    def sort_column(self) -> str:
        return PROC_COLUMNS[self.proc_col]

    @property
    def descending(self) -> bool:
        """The process table's order: biggest (or Z) first."""
        return (self.sort_column in _DESCENDING) != self.invert

    def matches(self, comm: str) -> bool:
        """The filter (a substring of the comm; empty: everything)."""
        return not self.filter or self.filter in comm

    def _live_rows(self, stats: TraceStats | None) -> list[ProcRow]:
        """The rows of the filter, without the processes gone (unless kept); notes
        which are dimmed (exiting) and which processes (of all, not only the filter's)
        are gone."""
        self.dim, self.gone = set(), []
        rows = stats.proc_rows() if stats else []
        if self.exits is None or not len(self.exits) or stats is None:
            return [r for r in rows if self.matches(r[1])]
        now, kept = time.monotonic(), []
        for r in rows:  # every row: the gone ones of all processes (their events go)
            state = self.exits.state(r[0], stats.procs[r[0]][2] or 0, now)
            if state == GONE and not self.keep_exited:
                self.gone.append(r[0])
                continue
            if state != LIVE:
                self.dim.add(r[0])
            if self.matches(r[1]):
                kept.append(r)
        return kept

    def procs(self, stats: TraceStats | None, rows: int) -> tuple[list[ProcRow], int]:
        """The process rows a frame of ``rows`` rows shows (filtered, sorted, the
        window that holds the selected row) and the number of rows in all."""
        self.page_procs = max(1, rows)
        self._stats = stats
        every = self._live_rows(stats)
        col = self.proc_col
        # ties in order of pid, so that equal rows do not swap between frames
        every.sort(key=lambda r: r[0])
        every.sort(key=lambda r: r[col], reverse=self.descending)
        if self.tree and stats is not None:
            every = tree_rows(every, stats.tree.parents())
        self._pids = [r[0] for r in every]
        self._comms = [r[1] for r in every]
        if self.sel_pid in self._pids:  # the selection follows its process
            self.sel = self._pids.index(self.sel_pid)
        self._select(self.sel)
        return every[self.top : self.top + rows], len(every)

    def event_window(self, keys: Sequence[float], rows: int) -> tuple[int, int]:
        """``(start, end)``: the events a frame of ``rows`` rows shows of ``keys``
        (each event's time, ascending). Following the newest unless scrolled back;
        scrolled back, the window stays on the events it showed as new ones arrive."""
        self.page_events = max(1, rows)
        n = self._n_events = len(keys)
        if self.back and self._anchor is not None and not self._moved:
            key, k = self._anchor
            lo = _bisect_left(keys, key)
            self.back = n - min(n, lo + k)
        self.back = max(0, min(self.back, n - rows))
        end = n - self.back
        self._moved = False
        self._anchor = None
        if self.back and end > 0:
            key = keys[end - 1]
            self._anchor = (key, end - _bisect_left(keys, key))
        return max(0, end - rows), end

    def events(self, tail: Iterable[dict[str, Any]], rows: int) -> tuple[list[Any], int]:
        """The events a frame of ``rows`` rows shows (filtered, or of the drill-down's
        process; oldest first) and the number that match in all."""
        every = self.matching(tail)
        start, end = self.event_window([e["ts"] for e in every], rows)
        return every[start:end], len(every)

    def matching(self, tail: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The decoded events of the filter (or of the drill-down's process)."""
        drill = self.drill
        return [
            e for e in tail
            if self.matches(shown_comm(e["comm"], e.get("type", ""))) and drill in (None, e["pid"])
        ]  # fmt: skip

    def shown_pids(self) -> list[int] | None:
        """The processes whose events the recent panel shows: the drill-down's, or
        those of the filter (None: every process)."""
        if self.drill is not None:
            return [self.drill]
        if not self.filter:
            return None
        stats = self._stats
        rows = stats.proc_rows() if stats is not None else []
        return [r[0] for r in rows if self.matches(r[1])]


def _bisect_left(keys: Sequence[float], key: float) -> int:
    return bisect.bisect_left(keys, key)


__all__ = ["ALIASES", "KEYS", "PROC_COLUMNS", "SORTS", "ProcRow", "ViewState"]
