"""The live dashboard of ``ringtool trace`` (rich ``Live``, alternate screen).

Panels (:mod:`ringtool.trace.tui_panels`): a header (state: paused, the filter;
uptime, total events/s and per source, a sparkline of events/s), the per-CPU table
(ring fill %, events/s, drops, lost), top processes, top syscalls (count, rate, p99
latency), per-source counters, and a tail of recent exec/open/net events. Keys, as in
htop (the ``?``/F1 overlay lists them all, :data:`ringtool.trace.tui_view.KEYS`):
``q`` quit, ``p`` pause (the display; counting goes on), ``<``/``>`` sort the
processes by another column and ``I`` invert, ``s`` cycle the syscalls' sort, ``/``
filter by comm (every panel: the ones the kernel counts for all processes say so),
arrows/PgUp/PgDn/Home/End scroll (``Tab``: which table), ``Enter`` drill down into a
process, ``Esc`` back. The state and what each key does are
:class:`ringtool.trace.tui_view.ViewState`; terminal input is parsed by
:class:`ringtool.trace.tui_keys.KeyParser` (unknown keys and sequences are ignored).

It fits 80×24 and gives extra rows to the tables and the tail; below 80×24 it says
that the terminal is too small instead of drawing cut cells. Numbers are scaled and
their columns have fixed minimum widths, so a number is never cut and columns do not
jump between frames. Data is never markup (see :func:`ringtool.trace.tui_panels.data`).

Cost: records are only counted (vectorised) as they arrive; only the newest few
exec/open/net records of each batch are decoded. The screen is drawn once per
interval and after a key, never per event. ``__exit__`` always restores the terminal
(tty mode, alternate screen, cursor), also when the loop raised.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import tty
from collections import deque
from types import TracebackType
from typing import Any

import numpy as np
from rich.console import Console, Group, RenderableType
from rich.layout import Layout
from rich.live import Live
from rich.text import Text

from ringtool.event.decode import Decoder, Event
from ringtool.trace import tui_panels as panels
from ringtool.trace.stats import TraceStats
from ringtool.trace.tui_cost import cost_panel
from ringtool.trace.tui_keys import ESC_TIMEOUT, KeyParser
from ringtool.trace.tui_panels import data, sparkline
from ringtool.trace.tui_view import SORTS, ViewState

#: The smallest terminal the dashboard draws in; below it a one-line message says so.
MIN_WIDTH, MIN_HEIGHT = 80, 24
TAIL_TYPES = ("exec", "open", "net", "mark")
TAIL_KEEP = 200


class TraceTui:
    """The TUI output (see the module doc); a context manager around rich ``Live``."""

    def __init__(
        self,
        decoder: Decoder,
        *,
        interval: float = 1.0,
        console: Console | None = None,
        input_fd: int | None = None,
    ) -> None:
        self.decoder = decoder
        self.interval = interval
        self.console = console or Console()
        self.tail: deque[Event] = deque(maxlen=TAIL_KEEP)
        self.view = ViewState()
        self.keys = KeyParser()
        self.sources: list[str] = []
        self.notes: list[str] = []
        self._stats: TraceStats | None = None
        self._live: Live | None = None
        self._tty_saved: Any = None
        if input_fd is None:
            input_fd = sys.stdin.fileno() if sys.stdin.isatty() else -1
        self.input_fd = input_fd
        self._tail_ids = [decoder.layout.type_id(t) for t in TAIL_TYPES if t != "net"]

    # the view's state, under the names the runner and tests use
    @property
    def paused(self) -> bool:
        return self.view.paused

    @property
    def sort(self) -> int:
        return self.view.sort

    @property
    def filter(self) -> str:
        return self.view.filter

    @filter.setter
    def filter(self, value: str) -> None:
        self.view.filter = value

    @property
    def editing(self) -> str | None:
        return self.view.editing

    @editing.setter
    def editing(self, value: str | None) -> None:
        self.view.editing = value

    # --- lifecycle ---------------------------------------------------------------------

    def __enter__(self) -> TraceTui:
        if self.input_fd >= 0:
            self._tty_saved = termios.tcgetattr(self.input_fd)
            tty.setcbreak(self.input_fd)
        self._live = Live(
            console=self.console, screen=True, auto_refresh=False, redirect_stdout=False,
            redirect_stderr=False, transient=True,
        )  # fmt: skip
        try:
            self._live.__enter__()
        except BaseException:
            self._restore_tty()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc: BaseException | None = None,
        tb: TracebackType | None = None,
    ) -> None:
        try:
            if self._live is not None:
                self._live.__exit__(exc_type, exc, tb)
        finally:
            self._live = None
            self._restore_tty()

    def _restore_tty(self) -> None:
        if self._tty_saved is not None:
            with contextlib.suppress(termios.error):
                termios.tcsetattr(self.input_fd, termios.TCSADRAIN, self._tty_saved)
            self._tty_saved = None

    # --- Output protocol ---------------------------------------------------------------

    def open(self) -> None:
        """The :class:`~ringtool.trace.sink.Output` call: ``__enter__``."""
        self.__enter__()

    def close(self) -> None:
        """The :class:`~ringtool.trace.sink.Output` call: ``__exit__``."""
        self.__exit__(None, None, None)

    def start(self, sources: list[str], notes: list[str]) -> None:
        self.sources = sources
        self.notes = list(notes)
        self._draw()

    def batch(self, arr: np.ndarray[Any, Any], net: list[Event]) -> None:
        if self.view.paused:
            return
        if len(arr):
            mask = np.isin(arr["h"]["type"], self._tail_ids)
            recent = arr[mask][-TAIL_KEEP:]
            self.tail.extend(self.decoder.decode(recent))
        self.tail.extend(net[-TAIL_KEEP:])

    def stats(self, stats: TraceStats) -> None:
        if not self.view.paused:
            self._stats = stats
            self._draw()

    def summary(self, stats: TraceStats) -> None:
        from ringtool.trace.output_columns import format_summary

        for line in format_summary(stats, None):
            print(line)

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def drill_pid(self) -> int | None:
        """The process of the drill-down (the runner counts its syscalls), or None."""
        return self.view.drill

    # --- keys --------------------------------------------------------------------------

    def handle_input(self) -> bool:
        """Read the pending keys (an escape sequence's rest is waited for up to
        :data:`ESC_TIMEOUT`); True when the user asked to quit."""
        keys = self._read_keys()
        for key in keys:
            if self.view.key(key):
                return True
        if keys:
            self._draw()
        return False

    def _read_keys(self) -> list[str]:
        try:
            keys = self.keys.feed(os.read(self.input_fd, 256))
            while self.keys.pending and select.select([self.input_fd], [], [], ESC_TIMEOUT)[0]:
                more = os.read(self.input_fd, 256)
                if not more:
                    break
                keys += self.keys.feed(more)
        except OSError:
            return []
        return keys + self.keys.flush()

    # --- drawing -----------------------------------------------------------------------

    def _draw(self) -> None:
        if self._live is not None:
            self._live.update(self.render(), refresh=True)

    def render(self) -> RenderableType:
        """The whole screen for the console's current size (below
        :data:`MIN_WIDTH` x :data:`MIN_HEIGHT`, a message asking for more room)."""
        width, height = self.console.size
        if width < MIN_WIDTH or height < MIN_HEIGHT:
            return self._too_small(width, height)
        s, v = self._stats, self.view
        ncpu = s.ncpu if s is not None else 1
        # the process table grows with the height; the CPU table beside it shows
        # every CPU it has room for
        rows_a = max(3, (height - 12) // 3)
        rows_b = max(3, min(8, (height - 12) // 3))
        rows_tail = max(1, height - rows_a - rows_b - 11)
        layout = Layout()
        top = Layout(panels.header(s, v, self.sources, width), name="header", size=2)
        bottom = Layout(panels.footer(v), name="footer", size=1)
        if v.help:  # the overlay takes the room of the tables
            layout.split_column(top, Layout(panels.help_table(), name="help"), bottom)
            return layout
        if v.cost:  # the cost panel takes the room of the tables too
            panel = cost_panel(s.cost if s is not None else None, height - 3)
            layout.split_column(top, Layout(panel, name="cost"), bottom)
            return layout
        layout.split_column(
            top,
            Layout(name="a", size=rows_a + 3),
            Layout(name="b", size=rows_b + 3),
            Layout(
                panels.events_table(self.tail, v, rows_tail, uid=width >= panels.UID_WIDTH),
                name="tail",
            ),
            bottom,
        )
        layout["a"].split_row(
            Layout(panels.cpu_table(s, v, min(ncpu, rows_a), width)),
            Layout(panels.procs_table(s, v, rows_a)),
        )
        if v.drill is not None:
            # the drill-down's histograms need room: 2/3 of the row beside the
            # syscalls of all processes, or all of it below 120 columns
            wide = width >= 120
            drill = panels.drill_table(s, v, rows_b, width * 2 // 3 if wide else width)
            if wide:
                layout["b"].split_row(
                    Layout(drill, ratio=2), Layout(panels.syscalls_table(s, v, rows_b), ratio=1)
                )
            else:
                layout["b"].update(drill)
        else:
            layout["b"].split_row(
                Layout(panels.syscalls_table(s, v, rows_b)),
                Layout(panels.sources_table(s, v, self.sources, self.notes, rows_b)),
            )
        return layout

    def _too_small(self, width: int, height: int) -> RenderableType:
        need = (
            f"terminal too small: {width}x{height}, ringtool trace needs {MIN_WIDTH}x{MIN_HEIGHT}"
        )
        return Group(
            Text(need, style="bold red", overflow="fold"),
            Text("enlarge the window (q quits)", overflow="fold"),
        )


__all__ = ["MIN_HEIGHT", "MIN_WIDTH", "SORTS", "TraceTui", "data", "sparkline"]
