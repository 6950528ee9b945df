"""The live dashboard of ``ringtool trace`` (rich ``Live``, alternate screen).

Panels (:mod:`ringtool.trace.dashboard.tui_panels`): a header (the command's filters,
``-c bash -x``; state: paused, the comm filter; uptime, total events/s and per source, a
sparkline of events/s), the per-CPU table (ring fill %, events/s, drops, lost), top
processes, top syscalls (count, rate, p99 latency), per-source counters, the machine's
TCP connections and disks while their sources run (:mod:`ringtool.trace.dashboard.tui_machine`),
a tail of recent exec/open/net events; kernel maps are read only while on screen
(:attr:`TraceTui.wants_cost`, :attr:`TraceTui.wants_conns`). Keys, as in htop (the ``?``/F1
overlay lists them and every column's meaning: :mod:`ringtool.trace.dashboard.tui_help`), do
what :class:`ringtool.trace.dashboard.tui_view.ViewState` says; terminal input is parsed by
:class:`ringtool.trace.dashboard.tui_keys.KeyParser` (unknown keys are ignored).

It fits 80×24 and gives extra rows to the tables and the tail; below 80×24 it says the
terminal is too small. Numbers are scaled in fixed minimum widths (never cut; columns
never jump). Data is never markup (:func:`ringtool.trace.dashboard.tui_panels.data`).
Cost: records are counted (vectorised) as they arrive, each process's newest exec/open
records kept raw (:mod:`ringtool.trace.dashboard.tui_recent`); only the rows a frame
shows are decoded, once per interval and after a key, never per event. Paused, it draws
a copy taken at ``p`` (:mod:`ringtool.trace.dashboard.tui_freeze`); counting goes on.
Start-up: it opens before the BPF programs compile, saying what is done and for how
long (:meth:`TraceTui.step`, 4 times a second). ``__exit__`` always restores the
terminal (tty mode, alternate screen, cursor), also when the loop raised.
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import termios
import threading
import time
import tty
from collections import deque
from types import TracebackType
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.layout import Layout
from rich.live import Live
from rich.text import Text

from ringtool.event.decode import Decoder, Event
from ringtool.event.records import NO_PACKETS, Records
from ringtool.trace.dashboard import tui_panels as panels
from ringtool.trace.dashboard.tui_cost import cost_panel
from ringtool.trace.dashboard.tui_events import events_table
from ringtool.trace.dashboard.tui_exits import Exits
from ringtool.trace.dashboard.tui_freeze import frozen_stats
from ringtool.trace.dashboard.tui_help import help_table
from ringtool.trace.dashboard.tui_keys import ESC_TIMEOUT, MOUSE_OFF, MOUSE_ON, KeyParser
from ringtool.trace.dashboard.tui_machine import MachinePanels
from ringtool.trace.dashboard.tui_mouse import click_target
from ringtool.trace.dashboard.tui_netdisk import ProcIO, drill_room, drill_row, top_row
from ringtool.trace.dashboard.tui_panels import TAIL_TYPES, data, sparkline
from ringtool.trace.dashboard.tui_recent import RecentEvents, shown_events
from ringtool.trace.dashboard.tui_view import SORTS, ViewState
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.sink import Drill

#: The smallest terminal the dashboard draws in; below it a one-line message says so.
MIN_WIDTH, MIN_HEIGHT = 80, 24
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
        keep_exited: bool = False,
        filters: tuple[str, ...] = (),
    ) -> None:
        self.decoder = decoder
        #: the command's filters as flags (``-c bash``, ``-x``), shown in the header
        self.filters = filters
        self.interval = interval
        self.console = console or Console()
        #: decoded events (net), beside the per-process raw records of ``recent``
        self.tail: deque[Event] = deque(maxlen=TAIL_KEEP)
        #: the newest packets not yet decoded into ``tail`` (an owned copy; decoded
        #: through the field table when a frame is drawn)
        self._net = NO_PACKETS
        lay = decoder.layout
        self.recent = RecentEvents(lay.event, [lay.type_id(t) for t in TAIL_TYPES if t != "net"])
        exit_ids = [t for t, name in lay.type_names.items() if name == "exit"]
        self.exits = Exits(exit_ids[0] if exit_ids else None)
        self.view = ViewState(keep_exited=keep_exited, exits=self.exits)
        self.machine = MachinePanels(lay, filters)  # the connections and disks panels
        self.keys = KeyParser()
        self._frozen: tuple[TraceStats | None, RecentEvents, list[Event]] | None = None
        self._forgotten: set[int] = set()  # pids whose records were dropped (gone)
        self._layout: Layout | None = None
        self._steps: list[tuple[str, float]] = []  # start-up: (what, since) (monotonic)
        self._started = time.monotonic()
        self._ticker: threading.Thread | None = None
        self._ticking = threading.Event()
        self.sources: list[str] = []
        self.io = ProcIO(decoder.layout, ())  # each process's traffic (tcp, net, disk)
        self.notes: list[str] = []
        self._stats: TraceStats | None = None
        self._live: Live | None = None
        self._tty_saved: Any = None
        if input_fd is None:
            input_fd = sys.stdin.fileno() if sys.stdin.isatty() else -1
        self.input_fd = input_fd

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
        if self._live is not None:  # opened early (start-up progress): once
            return self
        if self.input_fd >= 0:
            self._tty_saved = termios.tcgetattr(self.input_fd)
            tty.setcbreak(self.input_fd)
        self._live = Live(
            console=self.console, screen=True, auto_refresh=False, redirect_stdout=False,
            redirect_stderr=False, transient=True,
        )  # fmt: skip
        try:
            self._live.__enter__()
            if self.input_fd >= 0:
                self.console.file.write(MOUSE_ON)  # clicks as SGR reports (tui_keys)
                self.console.file.flush()
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
        self._stop_ticker()
        try:
            if self._live is not None:
                if self.input_fd >= 0:
                    self.console.file.write(MOUSE_OFF)
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

    def step(self, text: str) -> None:
        """Start-up: what the trace does now (``compiling trace_open.c``); shown with
        the time it has taken so far until the sources are read."""
        self._steps.append((text, time.monotonic()))
        if self._live is not None and self._ticker is None:
            self._ticking.clear()
            self._ticker = threading.Thread(target=self._tick_startup, daemon=True)
            self._ticker.start()
        self._draw()

    def _tick_startup(self) -> None:
        while not self._ticking.wait(0.25):
            self._draw()

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticking.set()
            self._ticker.join()
            self._ticker = None

    def start(self, sources: list[str], notes: list[str]) -> None:
        self._stop_ticker()
        self.sources = sources
        self.io = ProcIO(self.decoder.layout, sources)
        self.notes = list(notes)
        self._draw()

    def batch(self, records: Records) -> None:
        """Keep each process's newest exec/open records (vectorised, not decoded), the
        exits, and a copy of the newest packets (decoded when drawn); also while paused
        (the frozen copy is drawn)."""
        arr, net = records.events, records.net
        if len(arr):
            self.recent.add_batch(arr)
            self.exits.add_batch(arr)
            self.machine.add_batch(arr)
        self.io.add(records)
        if len(net):
            kept = self._net.concat(net.take(slice(-TAIL_KEEP, None)))
            self._net = kept.take(slice(-TAIL_KEEP, None)) if len(kept) > TAIL_KEEP else kept

    def stats(self, stats: TraceStats) -> None:
        self._stats = stats
        self.machine.tick(stats)
        self.io.tick(time.monotonic(), stats.tcp_io)
        quiet = ((pid, row[2] or 0) for pid, _, _, recent in stats.proc_rows() if not recent
                 for row in (stats.procs[pid],))  # fmt: skip
        self.exits.sweep(quiet)  # exits whose records were lost (drops)
        if not self.view.paused:
            self._draw()

    def summary(self, stats: TraceStats) -> None:
        from ringtool.trace.report.summary import format_summary

        for line in format_summary(stats, None):
            print(line)

    def note(self, text: str) -> None:
        self.notes.append(text)

    @property
    def wants_cost(self) -> bool:  # the cost panel is open: the run wants the statistics
        return self.view.cost

    @property
    def wants_conns(self) -> bool:  # the connections panel is on screen: the open ones
        return self.machine.wants_open(self.view, self.sources)

    @property
    def drill(self) -> Drill | None:
        """What the drill-down is of and its processes (the runner reads their
        syscalls), or None."""
        key = self.view.drill_key
        return None if key is None else (key, self.view.drill_pids(self._stats))

    # --- keys --------------------------------------------------------------------------

    def handle_input(self) -> bool:
        """Read the pending keys (an escape sequence's rest is waited for up to
        :data:`ESC_TIMEOUT`); True when the user asked to quit."""
        keys = self._read_keys()
        for key in keys:
            if key.startswith("click:"):
                self._click(key)
            elif self.view.key(key):
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

    def _click(self, key: str) -> None:
        """A mouse click (``click:X:Y``) on the process table: select or sort."""
        if self._layout is None or self.view.help or self.view.editing is not None:
            return
        _, x, y = key.split(":")
        row, column = click_target(self._layout, self.console, int(x) - 1, int(y) - 1, self.view)
        self.view.click(row, column)

    def _draw(self) -> None:
        if self._live is not None:
            self._live.update(self.render(), refresh=True)

    def _shown(self) -> tuple[TraceStats | None, RecentEvents, list[Event]]:
        """What a frame draws: now, or (paused) the copy taken when it paused."""
        if len(self._net):  # the packets kept since the last frame join the tail
            self.tail.extend(self.decoder.decode(self._net.rec))
            self._net = NO_PACKETS
        if not self.view.paused:
            self._frozen = None
            return self._stats, self.recent, list(self.tail)
        if self._frozen is None:
            s = frozen_stats(self._stats) if self._stats is not None else None
            self._frozen = (s, self.recent.frozen(), list(self.tail))
        return self._frozen

    def render(self) -> RenderableType:
        """The whole screen for the console's current size (below
        :data:`MIN_WIDTH` x :data:`MIN_HEIGHT`, a message asking for more room)."""
        width, height = self.console.size
        if width < MIN_WIDTH or height < MIN_HEIGHT:
            return self._too_small(width, height)
        if self._live is not None and not self.sources and self._steps:
            return panels.startup(self._steps, self._started, time.monotonic(), width)
        s, recent, tail = self._shown()
        v = self.view
        io = self.io.shown(v.paused)  # each process's traffic (paused: a copy)
        room, machine = self.machine.layouts(v, height, width, self.sources)
        # the process table grows with the height (less the machine-wide panels'
        # room); the CPU table beside it shows every CPU it has room for
        rows_a = max(3, (height - room - 12) // 3)
        rows_b = max(3, min(8, (height - room - 12) // 3))
        # what is left below the header (2), the two rows of tables (each with a title,
        # a header and its rule) and the footer (1), less the tail's own 3 lines
        rows_tail = max(1, height - room - rows_a - rows_b - 12)
        rows_b, rows_tail, more = drill_room(s, io, v, rows_b, rows_tail)
        layout = Layout()
        self._layout = layout
        bottom = Layout(panels.footer(v), name="footer", size=1)
        top = Layout(panels.header(s, v, self.sources, width, self.filters), name="header", size=2)
        if v.help:  # the overlay takes the room of the tables
            layout.split_column(top, Layout(help_table(v, height - 3), name="help"), bottom)
            return layout
        if v.cost:  # the cost panel takes the room of the tables too
            panel = cost_panel(s.cost if s is not None else None, height - 3)
            layout.split_column(top, Layout(panel, name="cost"), bottom)
            return layout
        procs = panels.procs_table(s, v, rows_a, io.frame)  # first: picks the filter's rows
        self._forget_gone()
        shown, total = shown_events(self.view, self.decoder, recent, tail, rows_tail)
        layout.split_column(
            top,
            Layout(name="a", size=rows_a + 3),
            Layout(name="b", size=rows_b + 3),
            *machine,
            Layout(
                events_table(shown, v, rows_tail, total=total, width=width),
                name="tail",
            ),
            bottom,
        )
        layout["a"].split_row(*top_row(s, v, procs, rows_a, width))
        if v.drilling:
            drill_row(layout["b"], s, io, v, rows_b, more, width)
        else:
            layout["b"].split_row(
                Layout(panels.syscalls_table(s, v, rows_b)),
                Layout(panels.sources_table(s, v, self.sources, self.notes, rows_b)),
            )
        return layout

    def _forget_gone(self) -> None:
        """Drop the recent records of processes that left the table (exited)."""
        new = [pid for pid in self.view.gone if pid not in self._forgotten]
        if new and not self.view.paused:
            self.recent.forget(new)
            self._forgotten.update(new)

    def _too_small(self, width: int, height: int) -> RenderableType:
        need = (
            f"terminal too small: {width}x{height}, ringtool trace needs {MIN_WIDTH}x{MIN_HEIGHT}"
        )
        return Group(Text(need, style="bold red", overflow="fold"),
                     Text("enlarge the window (q quits)", overflow="fold"))  # fmt: skip


__all__ = ["MIN_HEIGHT", "MIN_WIDTH", "SORTS", "TraceTui", "data", "sparkline"]
