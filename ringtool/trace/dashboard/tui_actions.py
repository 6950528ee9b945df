"""The dashboard's tables of keys and columns: what each key does (the method of
:class:`ringtool.trace.dashboard.tui_view.ViewState` it calls), the keys that scroll,
their aliases, the process table's columns and the sorts of the other tables. Data
only: the help overlay (:mod:`ringtool.trace.dashboard.tui_help`) is checked against
it by a test.
"""

from __future__ import annotations

#: The process table's columns, in order (``<``/``>`` move the sort along them); the
#: sources' columns follow where they run (:attr:`ViewState.columns`).
PROC_COLUMNS = ("PID", "COMM", "EVENTS", "EV/IV")
#: Columns sorted biggest first unless inverted (the others: smallest/A first).
DESCENDING = frozenset({"EVENTS", "EV/IV", "WAIT99", "NET TX/RX", "DISK R/W"})
#: The syscalls table's sorts (``s`` cycles them).
SORTS = ("count", "rate", "p99")
#: The connections panel's orders (``o`` cycles them: ringtool.trace.dashboard.tui_conns).
CONN_ORDERS = ("busiest", "newest", "longest-lived")
ProcRow = tuple[int, str, int, int]  # pid, comm, events, events in the last interval

#: What each key does: the method of :class:`ViewState` it calls (the arrows, PgUp/PgDn,
#: Home/End scroll: :data:`SCROLL_KEYS`). Every key here and there has a line in the
#: help overlay (:data:`ringtool.trace.dashboard.tui_help.KEYS`; a test checks it).
ACTIONS = {
    "?": "_help", "f1": "_help", "esc": "_escape", "p": "_pause", "P": "_pause",
    "s": "_next_sort", "S": "_next_sort", "/": "_start_filter", "<": "_left",
    ">": "_right", "f6": "_right", "I": "_invert", "tab": "_tab", "enter": "_enter",
    "n": "_enter_name", "f3": "_search", "f5": "_tree", "e": "_keep", "c": "_cost",
    "w": "_waits", "o": "_conn_order", "O": "_conn_order",
}  # fmt: skip
SCROLL_KEYS = ("up", "down", "pgup", "pgdn", "home", "end")
#: Keys that are other names of a key (vim's, htop's).
ALIASES = {"j": "down", "k": "up", "g": "home", "G": "end", "f10": "q", "f4": "/"}


__all__ = ["ACTIONS", "ALIASES", "CONN_ORDERS", "DESCENDING", "PROC_COLUMNS", "SCROLL_KEYS",
           "SORTS", "ProcRow"]  # fmt: skip
