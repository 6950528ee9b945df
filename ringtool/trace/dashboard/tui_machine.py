"""The dashboard's machine-wide panels: connections (:mod:`ringtool.trace.dashboard.tui_conns`)
and disks (:mod:`ringtool.trace.dashboard.tui_disks`), in a row of their own above the
recent events.

Which records each panel counts, and so when it is on screen, comes from the registry:
the types naming :data:`ringtool.event.registry.CONNECTIONS` or
:data:`ringtool.event.registry.DISKS` in their panels, shown while a source of them
runs (``--events tcp``, ``--events disk``). With both, they share the row (the
disks two fifths of it, and at least the 42 columns they need); the connections leave
out the columns they have no room for. :meth:`MachinePanels.room` says how many lines
the row takes of a terminal's height: 5 at 24 lines, more on a taller one. The open
TCP connections are read from the tcp source's hash while the panel is on screen
(:attr:`ringtool.trace.dashboard.tui.TraceTui.wants_conns`). Paused, the panels draw
what they had when ``p`` was pressed (counting goes on).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.layout import Layout

from ringtool.event.layout import LayoutError, TraceLayout
from ringtool.event.registry import CONNECTIONS, DISKS, SOURCE_OF, types_in
from ringtool.trace.dashboard.tui_conns import NO_CONNS, Connections, conns_table
from ringtool.trace.dashboard.tui_disks import WIDTH, DiskRow, Disks, disks_table
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.report.stats import TraceStats

Array = np.ndarray[Any, Any]
#: The most lines of rows the row of panels takes (a tall terminal's rest goes to the
#: tables and the recent events).
MAX_ROWS = 10


def _types(lay: TraceLayout, panel: str) -> tuple[list[int], np.dtype[Any] | None, set[str]]:
    """The type ids of ``panel``'s types this layout has, their record view (one
    struct for all of them) and their sources."""
    names = [n for n in types_in(panel) if n in lay.names]
    ids = [lay.type_id(n) for n in names]
    views = {lay.views[i] for i in ids if i in lay.views}
    if len(views) > 1:
        raise LayoutError(f"the types of dashboard panel {panel!r} have different records "
                          "(ringtool/event/registry.py)")  # fmt: skip
    return ids, next(iter(views), None), {SOURCE_OF[n] for n in names}


class MachinePanels:
    """The connections and disks panels of one dashboard (see the module doc).
    ``filters``: the command's, as the header shows them (``-c bash``); with any but
    ``--events`` the open connections are not read (the kernel's hash has those of
    every process, and of a passive one the owner only at its close)."""

    def __init__(self, lay: TraceLayout, filters: Sequence[str] = ()) -> None:
        ids, view, self._conn_sources = _types(lay, CONNECTIONS)
        self.conns = Connections(ids, view) if view is not None else None
        ids, view, self._disk_sources = _types(lay, DISKS)
        self.disks = Disks(ids, view) if view is not None else None
        # the open connections are the machine's: read only for a trace of every task
        self.every_task = all(f.split(" ", 1)[0] == "--events" for f in filters)
        self._frozen: tuple[Array, int, Array | None, list[DiskRow]] | None = None

    def add_batch(self, arr: np.ndarray[Any, Any]) -> None:
        """Count a batch of ``struct trace_event`` records (also while paused)."""
        if self.conns is not None:
            self.conns.add_batch(arr)
        if self.disks is not None:
            self.disks.add_batch(arr)

    def tick(self, stats: TraceStats) -> None:
        """An interval of ``stats`` closed: the disks' rates (over the same interval)
        and p99s, the open connections (when read)."""
        if self.conns is not None:
            live = stats.tcp_open
            self.conns.set_open(*((live.conns, live.now_ns) if live is not None else (None,)))
        if self.disks is not None:
            self.disks.tick(stats.disk_hist, stats.start + stats.interval_end, stats.start)

    def wants_open(self, view: ViewState, sources: Sequence[str]) -> bool:
        """The connections panel is on screen (neither the help nor the cost panel
        covers it, no drill-down takes its room) while ``sources`` run, in a trace of
        every task: its open connections are wanted."""
        covered = view.help or view.cost or view.drilling
        return self.every_task and self._shown(sources)[0] and not covered

    def _shown(self, sources: Sequence[str]) -> tuple[bool, bool]:
        on = set(sources)
        return (self.conns is not None and bool(on & self._conn_sources),
                self.disks is not None and bool(on & self._disk_sources))  # fmt: skip

    @staticmethod
    def room(height: int) -> int:
        """The lines the row of panels takes at ``height`` (title, heads and rule
        included) when it is on screen."""
        return max(2, min(MAX_ROWS, (height - 18) // 3)) + 3

    def layouts(
        self, view: ViewState, height: int, width: int, sources: Sequence[str]
    ) -> tuple[int, list[Layout]]:
        """The row of panels on a ``width`` x ``height`` screen, while ``sources``
        run: the lines it takes (:meth:`room`; 0: neither panel is on screen) and a
        layout to split the screen with ([] for none). A drill-down takes their room:
        it shows the process's own connections and I/O."""
        conns_on, disks_on = self._shown(sources)
        if not (conns_on or disks_on) or view.drilling:
            return 0, []
        room = self.room(height)
        conns = self.conns or Connections([], NO_CONNS.dtype)
        disks = self.disks.rows if self.disks is not None else []
        now = (conns.kept, conns.closed, conns.open, disks)
        # paused: what there was at p (the objects are replaced whole, never changed)
        self._frozen = (self._frozen or now) if view.paused else None
        kept, closed, opened, rows = self._frozen or now
        lines = room - 3
        row = Layout(name="machine", size=room)
        parts = []
        if conns_on:
            w = width - max(WIDTH, width * 2 // 5) if disks_on else width
            parts.append(Layout(conns_table(kept, closed, opened, view, lines, w), size=w))
        if disks_on:
            parts.append(Layout(disks_table(rows, view, lines), ratio=1))
        row.split_row(*parts)
        return room, [row]


__all__ = ["MAX_ROWS", "MachinePanels"]
