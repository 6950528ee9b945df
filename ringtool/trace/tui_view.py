"""The state of the ``ringtool trace`` dashboard and what each key does to it.

:class:`ViewState` holds what the user chose (pause, help overlay, filter, sort column and
order of the process table, the sort of the syscalls table, which table the arrows
scroll, scroll positions, the process shown in a drill-down) and :meth:`ViewState.key`
applies one key name (:mod:`ringtool.trace.tui_keys`). A key that means nothing in the
current state is ignored. :meth:`ViewState.procs` and :meth:`ViewState.events` pick, filter and
sort the rows a frame shows and keep the scroll positions inside them; the panels
(:mod:`ringtool.trace.tui_panels`) only draw what these return.

Scrolling: in the process table a selected row (the one ``Enter`` opens) moves with
the arrows, ``PgUp``/``PgDn`` (one page: the rows the last frame showed) and
``Home``/``End``; the window follows it. The event tail scrolls back from the newest
event (``Up`` is older; ``End`` follows the newest again). ``Tab`` says which table
the keys scroll.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ringtool.trace.proc_names import shown_comm
from ringtool.trace.stats import TraceStats

#: The process table's columns, in order (``<``/``>`` move the sort along them).
PROC_COLUMNS = ("PID", "COMM", "EVENTS", "EV/IV")
#: Columns sorted biggest first unless inverted (the others: smallest/A first).
_DESCENDING = frozenset({"EVENTS", "EV/IV"})
#: The syscalls table's sorts (``s`` cycles them).
SORTS = ("count", "rate", "p99")
ProcRow = tuple[int, str, int, int]  # pid, comm, events, events in the last interval

#: Every key and what it does (the help overlay draws this list).
KEYS = (
    ("q", "quit"),
    ("? F1", "this help (any key closes it)"),
    ("p", "pause the display (counting goes on)"),
    ("/", "filter by comm (Enter applies, Esc clears)"),
    ("< >  F6", "sort the processes by the column left/right"),
    ("I", "invert the sort order"),
    ("s", "sort the syscalls: count / rate / p99"),
    ("Tab", "scroll the processes or the recent events"),
    ("↑ ↓ PgUp PgDn", "move in the table"),
    ("Home End", "first / last row (End: follow the newest events)"),
    ("Enter", "drill down into the selected process"),
    ("Esc", "close the help or the cost panel / leave the drill-down"),
    ("c", "the cost of tracing: BPF run time per program, ringtool's CPU"),
)


@dataclass
class ViewState:
    """What the dashboard shows (see the module doc)."""

    paused: bool = False
    help: bool = False
    cost: bool = False  # the cost panel (ringtool.trace.tui_cost) instead of the tables
    filter: str = ""
    editing: str | None = None  # the filter being typed, or None
    sort: int = 0  # index into SORTS (the syscalls table)
    proc_col: int = 2  # index into PROC_COLUMNS
    invert: bool = False
    focus: str = "procs"  # or "events"
    sel: int = 0  # selected row of the process table
    top: int = 0  # first row of the process table shown
    back: int = 0  # events scrolled back from the newest
    drill: int | None = None  # the pid of the drill-down, or None
    page_procs: int = 1  # rows the last frame showed
    page_events: int = 1
    _pids: list[int] = field(default_factory=list)  # the process rows, in order
    _stats: TraceStats | None = None  # of the last frame (procs)
    _n_events: int = 0

    # --- keys --------------------------------------------------------------------------

    def key(self, key: str) -> bool:
        """Apply one key (a :mod:`ringtool.trace.tui_keys` name); True means quit."""
        if self.editing is not None:
            self._edit(key)
            return False
        if key in ("q", "Q"):
            return True
        if self.help:  # any other key closes the help
            self.help = False
            return False
        action = {
            "?": self._help, "f1": self._help, "esc": self._escape, "p": self._pause,
            "P": self._pause, "s": self._next_sort, "S": self._next_sort,
            "/": self._start_filter, "<": self._left, ">": self._right, "f6": self._right,
            "I": self._invert, "tab": self._tab, "enter": self._enter, "c": self._cost,
        }.get(key)  # fmt: skip
        if action is not None:
            action()
        else:
            self._scroll(key)
        return False

    def _edit(self, key: str) -> None:
        assert self.editing is not None
        if key == "enter":
            self.filter, self.editing = self.editing, None
            self.sel = self.top = self.back = 0
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
        else:
            self.drill = None

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
            if key in moves:
                self.sel += moves[key]
            elif key == "home":
                self.sel = 0
            elif key == "end":
                self.sel = last
            self.sel = max(0, min(self.sel, last))
            self._follow()
        else:
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

    def procs(self, stats: TraceStats | None, rows: int) -> tuple[list[ProcRow], int]:
        """The process rows a frame of ``rows`` rows shows (filtered, sorted, the
        window that holds the selected row) and the number of rows in all."""
        self.page_procs = max(1, rows)
        self._stats = stats
        every = [r for r in (stats.proc_rows() if stats else []) if self.matches(r[1])]
        col = self.proc_col
        # ties in order of pid, so that equal rows do not swap between frames
        every.sort(key=lambda r: r[0])
        every.sort(key=lambda r: r[col], reverse=self.descending)
        self._pids = [r[0] for r in every]
        self.sel = max(0, min(self.sel, len(every) - 1))
        self._follow()
        return every[self.top : self.top + rows], len(every)

    def events(self, tail: Iterable[dict[str, Any]], rows: int) -> tuple[list[Any], int]:
        """The events a frame of ``rows`` rows shows (filtered, or of the drill-down's
        process; oldest first) and the number that match in all."""
        self.page_events = max(1, rows)
        drill = self.drill
        every = [
            e for e in tail
            if self.matches(shown_comm(e["comm"], e.get("type", ""))) and drill in (None, e["pid"])
        ]  # fmt: skip
        self._n_events = len(every)
        self.back = max(0, min(self.back, len(every) - rows))
        end = len(every) - self.back
        return every[max(0, end - rows) : end], len(every)


__all__ = ["KEYS", "PROC_COLUMNS", "SORTS", "ProcRow", "ViewState"]
