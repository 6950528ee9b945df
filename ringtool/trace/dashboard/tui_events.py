"""The dashboard's recent-events table: the newest events of the filter or the
drill-down, their detail cut to the terminal (an open's syscall name, then its flags,
before its path: :func:`ringtool.event.detail_fit.fit_parts`), with a UID column where
it fits. Column headers are the fields' (``TS``, ``TYPE``), as in the columns output.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.table import Table
from rich.text import Text

from ringtool.event.detail import detail_split
from ringtool.event.detail_fit import fit_parts
from ringtool.event.safe_text import printable
from ringtool.event.value_text import CLOCK_WIDTH, clock_text
from ringtool.trace.dashboard.tui_panels import TAIL_TITLE, Column, table
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.report.proc_names import shown_comm

#: The terminal width from which the events table always has a UID column (below it,
#: only where it fits: :func:`events_table`).
UID_WIDTH = 100


def events_table(
    tail: Iterable[dict[str, Any]], view: ViewState, rows: int, *, uid: bool | None = None,
    total: int | None = None, width: int | None = None,
) -> Table:  # fmt: skip
    """The recent events (:data:`TAIL_TYPES`) of the filter (or of the drill-down's process),
    newest last; scrolled back, the title says which ones. TS is the local time with
    milliseconds. ``uid``: with a UID column (the task's real uid; ``-`` for net
    events); None: from :data:`UID_WIDTH` columns, and below where it fits, that is
    when with it every row keeps its path whole, an open its result too (its flags
    and syscall name may be cut). ``total`` given: ``tail`` is
    already the rows to show (:meth:`ViewState.event_window`) of ``total``. ``width``:
    the table's width, so that the detail is cut by
    :func:`ringtool.event.detail_fit.fit_parts` (an open's syscall name, then its flags,
    then the start of its path) rather than at its end."""
    if total is None:
        shown, total = view.events(tail, rows)
    else:
        shown = list(tail)
    focus = "▸ " if view.focus == "events" else ""
    what = f"process {view.drill}: " if view.drill is not None else ""
    if view.drill_name is not None:
        what = f"name {printable(view.drill_name)}: "
    title = Text(f"{focus}{what}{TAIL_TITLE}")
    if view.back and total:
        first = total - view.back - len(shown) + 1
        title.append(f"  {first}-{total - view.back}/{total}")
    else:
        title.append(f" ({total})")  # kept: the newest of each process (tui_recent)
    if view.filter:
        title.append(f"  [filter: {printable(view.filter)}]")
    cells = []
    for ev in shown if rows > 0 else []:
        comm = printable(shown_comm(ev["comm"], ev["type"]))  # packets: no task, NET_LABEL
        path, rest = detail_split(ev)
        cells.append([clock_text(ev["ts"]), str(ev["pid"]), str(ev.get("uid", "-")), comm,
                      ev["type"], printable(path), printable(rest)])  # fmt: skip
    if uid is None:
        uid = width is None or width >= UID_WIDTH or _uid_fits(cells, width)
    if not uid:
        cells = [[c[0], c[1], *c[3:]] for c in cells]
    cols = _UID_COLS if uid else [c for c in _UID_COLS if c[0] != "UID"]
    t = table(title, *cols, flex="DETAIL")
    room = None if width is None or not cells else _detail_room(cols, cells, width)
    for *front, path, rest in cells:
        text = path + rest if room is None else fit_parts(path, rest, room, front[-1] == "open")
        t.add_row(*front[:-2], Text(front[-2], no_wrap=True), front[-1], Text(text, no_wrap=True))
    return t


def _detail_room(cols: list[Column], cells: list[list[str]], width: int) -> int:
    """What the columns before DETAIL (their widest cell, their padding, rules) leave of
    ``width`` (``cells``: rows of ``cols`` with the detail in two cells)."""
    mins = [max([len(name), *w]) for name, _, *w in cols]
    fixed = [max(mins[i], *(len(c[i]) for c in cells)) for i in range(len(cols) - 1)]
    return width - sum(fixed) - 3 * len(cols) + 1  # padding 1+1, a rule between


def _uid_fits(cells: list[list[str]], width: int) -> bool:
    """Whether, with a UID column, every row keeps its path whole (an open its result
    too: only its syscall name and flags cut); the rest of another detail is cut at its
    end either way. ``cells``: rows with the UID."""
    if not cells:
        return True
    room = _detail_room(_UID_COLS, cells, width)
    for *_, typ, path, rest in cells:
        fitted = fit_parts(path, rest, room, typ == "open")
        if fitted == path + rest:
            continue
        result = rest[rest.rfind(" = ") :].split(" (")[0]  # `` = -2 ENOENT``
        if not fitted.startswith(path) or (typ == "open" and not fitted.endswith(result)):
            return False
    return True


#: The events table's columns with a UID (what :func:`_uid_fits` measures).
_UID_COLS: list[Column] = [("TS", "left", CLOCK_WIDTH), ("PID", "right", 7),
                           ("UID", "right", 6), ("COMM", "left"), ("TYPE", "left"),
                           ("DETAIL", "left")]  # fmt: skip


__all__ = ["UID_WIDTH", "events_table"]
