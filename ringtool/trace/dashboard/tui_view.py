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

The drill-down (``Enter``: the selected process; ``n``: every process of its name,
exited ones too) shows syscalls counted since the trace started (``proc_hist``,
bpf/trace_syscalls.c), and the sections of :mod:`ringtool.trace.dashboard.tui_netdisk`.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ringtool.trace.dashboard.tui_actions import (
    ACTIONS,
    ALIASES,
    CONN_ORDERS,
    DESCENDING,
    PROC_COLUMNS,
    SCROLL_KEYS,
    SORTS,
    ProcRow,
)
from ringtool.trace.dashboard.tui_exits import GONE, LIVE, Exits
from ringtool.trace.dashboard.tui_tree import ProcParents, tree_rows
from ringtool.trace.report.proc_names import shown_comm
from ringtool.trace.report.stats import TraceStats


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
    conn_order: int = 0  # index into CONN_ORDERS (the connections panel)
    proc_col: int = 2  # index into PROC_COLUMNS
    invert: bool = False
    focus: str = "procs"  # or "events"
    sel: int = 0  # selected row of the process table
    top: int = 0  # first row of the process table shown
    back: int = 0  # events scrolled back from the newest
    drill: int | None = None  # the pid of the drill-down, or None
    drill_name: str | None = None  # the comm of a drill-down by name (every pid of it)
    waits: bool = False  # the p99 sort includes the blocking waits (key w)
    help_top: int = 0  # the first line of the help overlay shown (it scrolls)
    sel_pid: int | None = None  # the process selected (the selection follows it)
    tree: bool = False  # F5: the rows as a process tree
    parents: ProcParents = field(default_factory=ProcParents)  # the tree's, from /proc
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
    columns: tuple[str, ...] = PROC_COLUMNS  # and the sources', sorted by ``extra`` (none: -1)
    extra: dict[int, tuple[float, ...]] = field(default_factory=dict)
    _comms: list[str] = field(default_factory=list)
    _n_events: int = 0
    #: keys a subclass adds (a replay's: tui_replay) and their help lines
    help_keys: ClassVar[tuple[tuple[str, str], ...]] = ()

    def banner(self) -> str:  # the header's word on where the data comes from ("": live)
        return ""

    # --- keys --------------------------------------------------------------------------

    def key(self, key: str) -> bool:
        """Apply one key (a :mod:`ringtool.trace.dashboard.tui_keys` name); True means quit."""
        if self.editing is not None:
            self._edit(key)
            return False
        key = ALIASES.get(key, key)
        if key in ("q", "Q"):
            return True
        if self.help:  # the arrows scroll the help; any other key closes it
            moves = {"up": -1, "down": 1, "pgup": -10, "pgdn": 10, "home": -(10**6), "end": 10**6}
            if key in moves:
                self.help_top = max(0, self.help_top + moves[key])
            else:
                self.help = False
            return False
        name = ACTIONS.get(key)
        if name is not None:
            getattr(self, name)()
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
        self.help, self.help_top = True, 0

    def _waits(self) -> None:
        self.waits = not self.waits

    def _cost(self) -> None:
        self.cost = not self.cost

    def _escape(self) -> None:
        if self.cost:
            self.cost = False
        elif self.drilling:
            self.drill = self.drill_name = None
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
        if column is not None and 0 <= column < len(self.columns):
            if column == self.proc_col:
                self.invert = not self.invert
            else:
                self.proc_col, self.invert = column, False
        elif row is not None:
            self._refresh()
            self.focus = "procs"
            if 0 <= self.top + row < len(self._pids):
                self._select(self.top + row)

    def _conn_order(self) -> None:
        self.conn_order = (self.conn_order + 1) % len(CONN_ORDERS)

    def _pause(self) -> None:
        self.paused = not self.paused

    def _next_sort(self) -> None:
        self.sort = (self.sort + 1) % len(SORTS)

    def _start_filter(self) -> None:
        self.editing = self.filter

    def _left(self) -> None:
        self.proc_col = (self.proc_col - 1) % len(self.columns)

    def _right(self) -> None:
        self.proc_col = (self.proc_col + 1) % len(self.columns)

    def _invert(self) -> None:
        self.invert = not self.invert

    def _tab(self) -> None:
        self.focus = "events" if self.focus == "procs" else "procs"

    def _enter(self) -> None:
        self._refresh()  # keys since the last frame may have changed the filter or sort
        if self.focus == "procs" and 0 <= self.sel < len(self._pids):
            self.drill, self.drill_name = self._pids[self.sel], None
            self.back = 0

    def _enter_name(self) -> None:
        """Drill down into every process named as the selected one (exited ones too)."""
        self._refresh()
        if self.focus == "procs" and 0 <= self.sel < len(self._pids) and self._stats:
            row = self._stats.procs.get(self._pids[self.sel])
            if row is not None:
                self.drill, self.drill_name = None, row[0]
                self.back = 0

    @property
    def drilling(self) -> bool:
        """A drill-down is open (by pid or by name)."""
        return self.drill is not None or self.drill_name is not None

    @property
    def drill_key(self) -> int | str | None:
        """What the drill-down is of: a pid, a comm (by name), or None."""
        return self.drill_name if self.drill_name is not None else self.drill

    def drill_pids(self, stats: TraceStats | None) -> frozenset[int]:
        """The processes of the drill-down: its pid, or (by name) every process seen
        with that comm, exited ones too."""
        if self.drill_name is not None:
            procs = stats.procs if stats is not None else {}
            return frozenset(pid for pid, row in procs.items() if row[0] == self.drill_name)
        return frozenset() if self.drill is None else frozenset({self.drill})

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
        return self.columns[min(self.proc_col, len(self.columns) - 1)]

    @property
    def descending(self) -> bool:
        """The process table's order: biggest (or Z) first."""
        return (self.sort_column in DESCENDING) != self.invert

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
        self.proc_col = col = min(self.proc_col, len(self.columns) - 1)
        # ties in order of pid, so that equal rows do not swap between frames
        every.sort(key=lambda r: r[0])
        if col < len(PROC_COLUMNS):
            every.sort(key=lambda r: r[col], reverse=self.descending)
        else:  # a source's column
            k, none = col - len(PROC_COLUMNS), (-1.0,) * (len(self.columns) - len(PROC_COLUMNS))
            every.sort(key=lambda r: self.extra.get(r[0], none)[k], reverse=self.descending)
        if self.tree and stats is not None:
            parents = self.parents.parents((r[0] for r in every), stats.tree.parents())
            every = tree_rows(every, parents)
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
            lo = bisect.bisect_left(keys, key)
            self.back = n - min(n, lo + k)
        self.back = max(0, min(self.back, n - rows))
        end = n - self.back
        self._moved = False
        self._anchor = None
        if self.back and end > 0:
            key = keys[end - 1]
            self._anchor = (key, end - bisect.bisect_left(keys, key))
        return max(0, end - rows), end

    def events(self, tail: Iterable[dict[str, Any]], rows: int) -> tuple[list[Any], int]:
        """The events a frame of ``rows`` rows shows (filtered, or of the drill-down's
        process; oldest first) and the number that match in all."""
        every = self.matching(tail)
        start, end = self.event_window([e["ts"] for e in every], rows)
        return every[start:end], len(every)

    def matching(self, tail: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """The decoded events of the filter (or of the drill-down's processes)."""
        if self.drilling:
            pids = self.drill_pids(self._stats)
            return [e for e in tail if e["pid"] in pids]
        return [e for e in tail if self.matches(shown_comm(e["comm"], e.get("type", "")))]

    def shown_pids(self) -> list[int] | None:
        """The processes whose events the recent panel shows: the drill-down's, or
        those of the filter (None: every process)."""
        if self.drilling:
            return sorted(self.drill_pids(self._stats))
        if not self.filter:
            return None
        stats = self._stats
        rows = stats.proc_rows() if stats is not None else []
        return [r[0] for r in rows if self.matches(r[1])]


__all__ = ["ACTIONS", "ALIASES", "CONN_ORDERS", "PROC_COLUMNS", "SCROLL_KEYS", "SORTS",
           "ProcRow", "ViewState"]  # fmt: skip
