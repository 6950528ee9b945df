"""The live dashboard of ``ringtool trace`` (rich ``Live``, alternate screen).

Panels: a header (uptime, total events/s and per source, a sparkline of events/s),
the per-CPU table (ring fill %, events/s, drops, lost), top processes, top syscalls
(count, rate, p99 latency), per-source counters, and a tail of recent exec/open/net
events; a footer lists the keys: ``q`` quit, ``p`` pause (the display; counting goes
on), ``s`` cycle the sort (count / rate / p99), ``/`` filter by comm (Enter applies,
Esc clears). It fits 80×24 and gives extra rows to the tables and the tail; below
80×24 it says that the terminal is too small instead of drawing cut cells. Numbers are
scaled (``10.8k``, ``8.53M``, ``4.08µs``, ``34.2s``: :mod:`ringtool.trace.units`) and
their columns have fixed minimum widths, so a number is never cut and columns do not
jump between frames; the text column of each table takes the room that is left.

Data is never markup: every string that comes from a traced process or the user
(comm, path, notes, the filter) is a :class:`rich.text.Text` made by :func:`data`,
with control characters and escape sequences shown escaped
(:func:`ringtool.trace.safe_text.printable`), so a file named ``[/x]`` or
``\x1b[2J`` is shown as that name and cannot restyle, clear or crash the dashboard.

Cost: records are only counted (vectorised) as they arrive; only the newest few
exec/open/net records of each batch are decoded. The screen is drawn once per
interval and after a key, never per event. ``__exit__`` always restores the terminal
(tty mode, alternate screen, cursor), also when the loop raised.
"""

from __future__ import annotations

import contextlib
import os
import sys
import termios
import time
import tty
from collections import deque
from types import TracebackType
from typing import Any

import numpy as np
from rich import box
from rich.console import Console, Group, RenderableType
from rich.layout import Layout
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ringtool.trace.events import Decoder, Event, detail
from ringtool.trace.safe_text import printable
from ringtool.trace.stats import TraceStats
from ringtool.trace.units import count, duration_ns

SPARKS = "▁▂▃▄▅▆▇█"
#: The smallest terminal the dashboard draws in; below it a one-line message says so.
MIN_WIDTH, MIN_HEIGHT = 80, 24
SORTS = ("count", "rate", "p99")
TAIL_TYPES = ("exec", "open", "net")
TAIL_KEEP = 200


def sparkline(values: list[float], width: int) -> str:
    """The last ``width`` values as block characters scaled to their maximum."""
    vals = values[-width:] if width > 0 else []
    top = max(vals, default=0.0)
    if top <= 0:
        return SPARKS[0] * len(vals)
    return "".join(SPARKS[min(len(SPARKS) - 1, int(v / top * (len(SPARKS) - 1)))] for v in vals)


def data(text: str, style: str = "") -> Text:
    """A cell of data from a traced process (or typed by the user): never markup,
    never a control character (see :mod:`ringtool.trace.safe_text`)."""
    return Text(printable(text), style=style, no_wrap=True)


def _table(
    title: str | Text, *cols: tuple[str, str] | tuple[str, str, int], flex: str = ""
) -> Table:
    """A dashboard table; ``title`` is plain text (a ``str`` is not parsed as markup).
    A column is ``(name, justify)``, or ``(name, justify, min_width)`` for a number
    column that must never be cut (its values are at most that wide: see
    :mod:`ringtool.trace.units`); number columns keep their width from frame to frame.
    The ``flex`` column takes the room that is left (and is the one cut with ``…``)."""
    heading = Text(title) if isinstance(title, str) else title.copy()
    heading.stylize("bold cyan")
    t = Table(
        title=heading, title_justify="left", box=box.SIMPLE_HEAD,
        show_edge=False, pad_edge=True, padding=(0, 1), expand=True,
    )  # fmt: skip
    for name, justify, *width in cols:
        t.add_column(
            name, justify=justify, no_wrap=True, overflow="ellipsis",  # type: ignore[arg-type]
            min_width=max(len(name), *width) if width else None,
            ratio=1 if name == flex else None,
        )  # fmt: skip
    return t


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
        self.paused = False
        self.sort = 0
        self.filter = ""
        self.editing: str | None = None  # the filter being typed, or None
        self.sources: list[str] = []
        self.notes: list[str] = []
        self._stats: TraceStats | None = None
        self._live: Live | None = None
        self._tty_saved: Any = None
        if input_fd is None:
            input_fd = sys.stdin.fileno() if sys.stdin.isatty() else -1
        self.input_fd = input_fd
        self._tail_ids = [decoder.layout.type_id(t) for t in TAIL_TYPES if t != "net"]

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

    def start(self, sources: list[str], notes: list[str]) -> None:
        self.sources = sources
        self.notes = list(notes)
        self._draw()

    def batch(self, arr: np.ndarray[Any, Any], net: list[Event]) -> None:
        if self.paused:
            return
        if len(arr):
            mask = np.isin(arr["h"]["type"], self._tail_ids)
            recent = arr[mask][-TAIL_KEEP:]
            self.tail.extend(self.decoder.decode(recent))
        self.tail.extend(net[-TAIL_KEEP:])

    def stats(self, stats: TraceStats) -> None:
        self._stats = stats
        if not self.paused:
            self._draw()

    def summary(self, stats: TraceStats) -> None:
        from ringtool.trace.output_columns import format_summary

        for line in format_summary(stats, None):
            print(line)

    def note(self, text: str) -> None:
        self.notes.append(text)

    # --- keys --------------------------------------------------------------------------

    def handle_input(self) -> bool:
        """Read the pending keys; True when the user asked to quit."""
        try:
            data = os.read(self.input_fd, 64).decode("utf-8", "replace")
        except OSError:
            return False
        for ch in data:
            if self.editing is not None:
                if ch in "\r\n":
                    self.filter, self.editing = self.editing, None
                elif ch == "\x1b":
                    self.filter, self.editing = "", None
                elif ch in "\x7f\b":
                    self.editing = self.editing[:-1]
                elif ch.isprintable():
                    self.editing += ch
                continue
            if ch in "qQ":
                return True
            if ch in "pP":
                self.paused = not self.paused
            elif ch in "sS":
                self.sort = (self.sort + 1) % len(SORTS)
            elif ch == "/":
                self.editing = ""
        self._draw()
        return False

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
        s = self._stats
        ncpu = s.ncpu if s is not None else 1
        rows_a = max(3, min(ncpu, (height - 12) // 3))
        rows_b = max(3, min(8, (height - 12) // 3))
        layout = Layout()
        layout.split_column(
            Layout(self._header(width), name="header", size=2),
            Layout(name="a", size=rows_a + 3),
            Layout(name="b", size=rows_b + 3),
            Layout(self._tail_table(max(1, height - rows_a - rows_b - 11)), name="tail"),
            Layout(self._footer(), name="footer", size=1),
        )
        layout["a"].split_row(Layout(self._cpu_table(rows_a, width)), Layout(self._procs(rows_a)))
        layout["b"].split_row(Layout(self._syscalls(rows_b)), Layout(self._sources(rows_b)))
        return layout

    def _too_small(self, width: int, height: int) -> RenderableType:
        need = (
            f"terminal too small: {width}x{height}, ringtool trace needs {MIN_WIDTH}x{MIN_HEIGHT}"
        )
        return Group(
            Text(need, style="bold red", overflow="fold"),
            Text("enlarge the window (q quits)", overflow="fold"),
        )

    def _header(self, width: int) -> RenderableType:
        s = self._stats
        if s is None:
            return Text(f"ringtool trace: starting {', '.join(self.sources)}...")
        up = int(s.uptime)
        per = "  ".join(f"{k} {count(v)}/s" for k, v in s.rate_source.items())
        if s.ordering is not None:
            per += f"  out-of-order {count(s.ordering['out_of_order'])}"
        if s.export is not None:
            per += (f"  exported {s.export['exported']:,}  export_dropped "
                    f"{s.export['export_dropped']:,}")  # fmt: skip
        line1 = Text.assemble(
            ("ringtool trace", "bold"), f"  up {up // 3600}:{up // 60 % 60:02}:{up % 60:02}  ",
            (f"{count(s.rate_total)} events/s", "bold green"), f"  {per}",
        )  # fmt: skip
        line1.truncate(width, overflow="ellipsis")
        hist = list(s.history)
        label = f"events/s (max {count(max(hist, default=0))}) "
        line2 = Text(label + sparkline(hist, max(0, width - len(label))), style="green")
        return Group(line1, line2)

    def _cpu_table(self, rows: int, width: int) -> Table:
        cols: list[tuple[str, str] | tuple[str, str, int]] = [
            ("CPU", "right", 3), ("FILL%", "right", 5), ("EV/S", "right", 5),
            ("DROPS", "right", 5), ("LOST", "right", 5),
        ]  # fmt: skip
        xdrop = self._stats is not None and self._stats.export is not None
        if xdrop:
            cols.append(("XDROP", "right", 5))  # --export: events that did not reach the broker
        trend = max(0, width // 2 - 42 - 7 * xdrop)  # a sparkline column when the half has room
        if trend >= 6:
            cols.append(("EV/S TREND", "left"))
        t = _table("per CPU", *cols)
        s = self._stats
        if s is not None:
            for cpu in range(min(s.ncpu, rows)):
                fill = 100 * s.fill_cpu.get(cpu, 0.0)
                style = "red" if fill > 80 or s.drops_cpu[cpu] else ""
                cells = [
                    str(cpu),
                    f"{fill:.1f}",
                    count(s.rate_cpu[cpu]),
                    count(s.drops_cpu[cpu]),
                    count(s.lost_cpu.get(cpu, 0)),
                ]
                if xdrop:
                    per = s.export["export_dropped_per_cpu"]  # type: ignore[index]
                    cells.append(count(per[cpu] if cpu < len(per) else 0))
                if trend >= 6:
                    cells.append(sparkline(list(s.history_cpu[cpu]), trend))
                t.add_row(*cells, style=style)
        return t

    def _procs(self, rows: int) -> Table:
        by = "rate" if SORTS[self.sort] == "rate" else "count"
        t = _table(f"top processes (by {by})", ("PID", "right", 7), ("COMM", "left"),
                   ("EVENTS", "right", 5), ("EV/IV", "right", 5), flex="COMM")  # fmt: skip
        s = self._stats
        if s is not None:
            procs = s.top_procs(len(s.procs) if self.filter else rows, by)
            if self.filter:
                procs = [p for p in procs if self.filter in p[1]][:rows]
            for pid, comm, n, recent in procs:
                t.add_row(str(pid), data(comm), count(n), count(recent))
        return t

    def _syscalls(self, rows: int) -> Table:
        t = _table(f"top syscalls (by {SORTS[self.sort]})", ("SYSCALL", "left"),
                   ("COUNT", "right", 5), ("/S", "right", 5), ("P99", "right", 6),
                   flex="SYSCALL")  # fmt: skip
        s = self._stats
        if s is not None:
            for r in s.top_syscalls(rows, SORTS[self.sort]):
                t.add_row(data(r.name), count(r.count), count(r.rate), duration_ns(r.p99_ns))
        return t

    def _sources(self, rows: int) -> Table:
        t = _table("sources", ("SOURCE", "left"), ("EV/S", "right", 5), ("DROPS", "right", 5),
                   flex="SOURCE")  # fmt: skip
        s = self._stats
        for name in self.sources[:rows]:
            rate = s.rate_source.get(name, 0.0) if s is not None else 0.0
            drops = s.drops_source.get(name, 0) if s is not None else 0
            t.add_row(name, count(rate), count(drops))
        for note in self.notes[: max(0, rows - len(self.sources))]:
            t.add_row(data(note, "yellow"), "", "")
        return t

    def _tail_table(self, rows: int) -> Table:
        title = Text("recent exec/open/net")
        if self.filter:
            title.append(f"  [filter: {printable(self.filter)}]")
        t = _table(title, ("TIME", "left", 8), ("PID", "right", 7), ("COMM", "left"),
                   ("EVENT", "left"), ("DETAIL", "left"), flex="DETAIL")  # fmt: skip
        events = [e for e in self.tail if not self.filter or self.filter in e["comm"]]
        for ev in events[-rows:] if rows > 0 else []:
            clock = time.strftime("%H:%M:%S", time.localtime(ev["ts"]))
            t.add_row(clock, str(ev["pid"]), data(ev["comm"]), ev["type"], data(detail(ev)))
        return t

    def _footer(self) -> Text:
        if self.editing is not None:
            return Text(f"filter by comm: {printable(self.editing)}▏ (Enter apply, Esc clear)",
                        style="reverse")  # fmt: skip
        state = "  [PAUSED]" if self.paused else ""
        return Text(
            f" q quit  p pause  s sort: {SORTS[self.sort]}  / filter{state}", style="reverse"
        )


__all__ = ["MIN_HEIGHT", "MIN_WIDTH", "SORTS", "TraceTui", "data", "sparkline"]
