"""The panels of the ``ringtool trace`` dashboard, each drawn from the stats and the
:class:`~ringtool.trace.dashboard.tui_view.ViewState` (which picks, filters and sorts the rows).

Data is never markup: every string that comes from a traced process or the user
(comm, path, notes, the filter) is a :class:`rich.text.Text` made by :func:`data`,
with control characters and escape sequences shown escaped
(:func:`ringtool.event.safe_text.printable`). Number columns have fixed minimum widths
and scaled values (:mod:`ringtool.trace.units`), so they are never cut.

The filter applies to the process table and the event tail; the per-CPU, syscalls and
sources panels count every process (the kernel keeps those counters for all of them
together), and their titles say ``all processes`` while a filter or a drill-down is
active.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ringtool.event.registry import RECENT, RECENT_TITLE, types_in
from ringtool.event.safe_text import printable
from ringtool.trace.dashboard.tui_iocols import CPU_WAIT, WIDTHS, io_cells, source_columns
from ringtool.trace.dashboard.tui_table import PanelTable
from ringtool.trace.dashboard.tui_view import SORTS, ViewState
from ringtool.trace.reading.latency_buckets import approx_duration, to_log2
from ringtool.trace.report.hist import SPARKS, spark
from ringtool.trace.report.proc_io import IoFrame
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.report.waits import is_wait
from ringtool.trace.units import count

Column = tuple[str, str] | tuple[str, str, int]
#: The types the recent-events tail keeps (exec, open, net, mark) and its title ("recent
#: exec/open/net"): the registry's panels (:mod:`ringtool.event.registry`).
TAIL_TYPES = types_in(RECENT)
TAIL_TITLE = "recent " + "/".join(types_in(RECENT_TITLE))


def sparkline(values: list[float], width: int) -> str:
    """The last ``width`` values as block characters scaled to their maximum."""
    vals = values[-width:] if width > 0 else []
    top = max(vals, default=0.0)
    if top <= 0:
        return SPARKS[0] * len(vals)
    return "".join(SPARKS[min(len(SPARKS) - 1, int(v / top * (len(SPARKS) - 1)))] for v in vals)


def data(text: str, style: str = "") -> Text:
    """A cell of data from a traced process (or typed by the user): never markup,
    never a control character (see :mod:`ringtool.event.safe_text`)."""
    return Text(printable(text), style=style, no_wrap=True)


def table(title: str | Text, *cols: Column, flex: str = "") -> Table:
    """A dashboard table; ``title`` is plain text (a ``str`` is not parsed as markup).
    A column is ``(name, justify)``, or ``(name, justify, min_width)`` for a number
    column that must never be cut (its values are at most that wide: see
    :mod:`ringtool.trace.units`); number columns keep their width from frame to frame.
    The ``flex`` column takes the room that is left (and is the one cut with ``…``).
    Drawn cheaply (:class:`~ringtool.trace.dashboard.tui_table.PanelTable`)."""
    heading = Text(title) if isinstance(title, str) else title.copy()
    heading.stylize("bold cyan")
    heading.no_wrap, heading.overflow = True, "ellipsis"  # one line, cut with …
    t = PanelTable(
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


def clock(seconds: float) -> str:
    """Seconds as ``H:MM:SS``."""
    up = int(seconds)
    return f"{up // 3600}:{up // 60 % 60:02}:{up % 60:02}"


def _global(title: str, view: ViewState) -> str:
    return f"{title} (all processes)" if view.filter or view.drilling else title


def source_label(name: str) -> str:
    """A source as the header and the sources table name it: the syscalls source's
    events are its slow syscalls (every call is counted in the syscalls table)."""
    return "slow syscalls" if name == "syscalls" else name


def syscall_name(name: str) -> Text:
    """A syscall table's name cell: a blocking wait (:mod:`ringtool.trace.report.waits`)
    marked ``(wait)`` and dimmed."""
    if is_wait(name):
        return Text.assemble(printable(name), (" (wait)", "dim"), style="dim", no_wrap=True)
    return data(name)


def header(
    s: TraceStats | None,
    view: ViewState,
    sources: list[str],
    width: int,
    filters: Sequence[str] = (),
) -> RenderableType:
    """Two lines: the command's ``filters`` (``-c bash -x``, :func:`filters_text`),
    state (paused, the comm filter), uptime and rates; the events/s sparkline."""
    state = Text.assemble("  ", (b, "bold reverse")) if (b := view.banner()) else Text()
    if filters:
        state.append("  " + filters_text(filters, width // 2 - 8), "bold cyan")
    if view.paused:
        state.append("  [PAUSED]", "bold yellow")
    if view.filter:
        state.append("  filter: comm~", "bold magenta")
        state.append(printable(view.filter), "bold magenta")
    if s is None:
        line = Text.assemble(f"ringtool trace: starting {', '.join(sources)}...", state)
        line.truncate(width, overflow="ellipsis")
        return line
    per = "  ".join(f"{source_label(k)} {count(v)}/s" for k, v in s.rate_source.items())
    if s.ordering is not None:
        per += f"  out-of-order {count(s.ordering['out_of_order'])}"
    if s.export is not None:
        per += (f"  exported {s.export['exported']:,}  export_dropped "
                f"{s.export['export_dropped']:,}")  # fmt: skip
    line1 = Text.assemble(
        ("ringtool trace", "bold"), state, f"  up {clock(s.uptime)}  ",
        (f"{count(s.rate_total)} events/s", "bold green"), f"  total {count(s.total)}",
        f"  {per}",
    )  # fmt: skip
    line1.truncate(width, overflow="ellipsis")
    hist = list(s.history)
    label = f"events/s (max {count(max(hist, default=0))}) "
    line2 = Text(label + sparkline(hist, max(0, width - len(label))), style="green")
    return Group(line1, line2)


def filters_text(filters: Sequence[str], room: int) -> str:
    """``filters`` (``FLAG`` or ``FLAG VALUE`` each) made printable and joined, in
    about ``room`` characters: the longest value is cut in its middle
    (:func:`shorten_middle`) until they fit or no value can be cut further; the flags
    always stay."""
    items = [printable(f) for f in filters]
    while len(text := " ".join(items)) > room:
        i = max(range(len(items)), key=lambda k: len(items[k]))
        flag, _, value = items[i].partition(" ")
        shorter = shorten_middle(value, len(value) - (len(text) - room))
        if len(shorter) >= len(value):
            break
        items[i] = f"{flag} {shorter}"
    return text


def shorten_middle(text: str, room: int) -> str:
    """``text`` in at most ``room`` characters, its middle replaced by ``…`` (a
    quarter of the start and the end stay); at least 8 characters are kept."""
    room = max(8, room)
    if len(text) <= room:
        return text
    head = max(1, room // 4)
    return text[:head] + "…" + text[len(text) - (room - 1 - head) :]


def cpu_table(s: TraceStats | None, view: ViewState, rows: int, width: int) -> Table:
    cols: list[Column] = [
        ("CPU", "right", 3), ("FILL%", "right", 5), ("EV/S", "right", 5),
        ("DROPS", "right", 5), ("LOST", "right", 5),
    ]  # fmt: skip
    xdrop = s is not None and s.export is not None
    if xdrop:
        cols.append(("XDROP", "right", 5))  # --export: events that did not reach the broker
    trend = max(0, width // 2 - 42 - 7 * xdrop)  # a sparkline column when the half has room
    if trend >= 6:
        cols.append(("EV/S TREND", "left"))
    title = _global("per CPU", view)
    last = s.drop_log[-1] if s is not None and s.drop_log else None
    if last is not None:  # when the drops happened: a burst is not a standing alarm
        n = count(last.dropped + last.lost)
        title += f"  last drops at up {clock(last.uptime_s)} (+{n})"  # cut with … if long
    t = table(title, *cols)
    if s is None:
        return t
    for cpu in range(min(s.ncpu, rows)):
        fill = 100 * s.fill_cpu.get(cpu, 0.0)
        # red: nearly full, or dropping now (in the last interval), not drops long ago
        style = "red" if fill > 80 or s.drops_cpu_interval[cpu] else ""
        cells = [str(cpu), f"{fill:.1f}", count(s.rate_cpu[cpu]), count(s.drops_cpu[cpu]),
                 count(s.lost_cpu.get(cpu, 0))]  # fmt: skip
        if xdrop:
            per = s.export["export_dropped_per_cpu"]  # type: ignore[index]
            cells.append(count(per[cpu] if cpu < len(per) else 0))
        if trend >= 6:
            cells.append(sparkline(list(s.history_cpu[cpu]), trend))
        t.add_row(*cells, style=style)
    return t


def procs_table(s: TraceStats | None, view: ViewState, rows: int,
                io: IoFrame | None = None) -> Table:  # fmt: skip
    """The process table, sorted by the chosen column (marked ``▼`` biggest first,
    ``▲`` smallest first), its selected row reversed, its position in the title; the
    sources' columns (WAIT99, NET TX/RX, DISK R/W: :mod:`ringtool.trace.dashboard.tui_iocols`)
    where they run (``io``: the interval's traffic)."""
    view.columns, view.extra = source_columns(s, io)
    shown, total = view.procs(s, rows)
    mark = "▼" if view.descending else "▲"
    names = [n + mark if i == view.proc_col else n for i, n in enumerate(view.columns)]
    where = f"  {view.sel + 1}/{total}" if total else ""
    focus = "▸ " if view.focus == "procs" else ""
    cols: list[Column] = [(names[0], "right", 8), (names[1], "left"), (names[2], "right", 6),
                          (names[3], "right", 6)]  # fmt: skip
    for name, shown_name in zip(view.columns[4:], names[4:], strict=True):
        cols.append((shown_name, "right", WIDTHS[name]))
    t = table(f"{focus}top processes{where}", *cols, flex=names[1])
    for i, (pid, comm, n, recent) in enumerate(shown):
        selected = view.focus == "procs" and view.top + i == view.sel
        style = "reverse" if selected else ""
        if pid in view.dim:  # exited: htop's dimmed row, until it leaves the table
            style = f"{style} dim".strip()
        cells: list[str | Text] = [str(pid) if pid else "-", data(comm), count(n), count(recent)]
        t.add_row(*cells, *io_cells(s, io, view.columns, pid), style=style)
    return t


def syscalls_table(s: TraceStats | None, view: ViewState, rows: int) -> Table:
    """Every process's syscalls (all calls, not only the slow ones) by the sort chosen;
    sorted by p99, the blocking waits are left out unless ``view.waits`` (key ``w``)."""
    by = SORTS[view.sort]
    waits = view.waits or by != "p99"
    what = by if waits or by != "p99" else "p99, no waits: w"
    t = table(_global(f"top syscalls (by {what})", view), ("SYSCALL", "left"),
              ("COUNT", "right", 5), ("/S", "right", 5), ("P99", "right", 6),
              flex="SYSCALL")  # fmt: skip
    if s is not None:
        for r in s.top_syscalls(rows, by, waits=waits):
            t.add_row(syscall_name(r.name), count(r.count), count(r.rate),
                      approx_duration(r.p99_ns))  # fmt: skip
    return t


def sources_table(
    s: TraceStats | None, view: ViewState, sources: list[str], notes: list[str], rows: int
) -> Table:
    t = table(_global("sources", view), ("SOURCE", "left"), ("EV/S", "right", 5),
              ("DROPS", "right", 5), flex="SOURCE")  # fmt: skip
    for name in sources[:rows]:
        rate = s.rate_source.get(name, 0.0) if s is not None else 0.0
        drops = s.drops_source.get(name, 0) if s is not None else 0
        t.add_row(source_label(name), count(rate), count(drops))
    for note in notes[: max(0, rows - len(sources))]:
        t.add_row(data(note, "yellow"), "", "")
    return t


def drill_table(s: TraceStats | None, view: ViewState, rows: int, width: int = 53) -> Table:
    """The drill-down (``width`` columns): one process's syscalls (or, by name, those
    of every process of a comm) since the trace started, most called first, with
    count, rate, p99 and the log2 latency histogram as a sparkline (``Esc``
    returns)."""
    pid, name = view.drill, view.drill_name
    if name is not None:
        title = Text("name ")
        title.append(printable(name))
        n = len(view.drill_pids(s))
        title.append(f" ({n} process{'es' if n != 1 else ''})")
    else:
        row = s.procs.get(pid) if s is not None and pid is not None else None
        title = Text(f"process {pid}  ")
        title.append(printable(row[0]) if row else "(gone)")
    title.append("  (Esc returns)")
    live = s is not None and view.drilling and s.drill_key == view.drill_key
    if live:
        title.append("  syscalls since the trace started")
    title.no_wrap, title.overflow = True, "ellipsis"  # one line: the panel keeps its rows
    t = table(title, ("SYSCALL", "left"), ("COUNT", "right", 5), ("/S", "right", 5),
              ("P99", "right", 6), ("LATENCY (log2)", "left"), flex="LATENCY (log2)")  # fmt: skip
    if s is None:
        return t
    if pid is not None:
        t.caption = children_line(s, pid, width)
        t.caption_justify = "left"
    if "syscalls" not in s.sources:
        t.add_row(data("syscalls source not running"), "", "", "", "")
    elif not live:
        t.add_row(data("reading its syscalls at the next interval"), "", "", "", "")
    elif not s.drill_syscalls:
        t.add_row(data("no syscall of it counted (or forgotten: the busiest are kept)"),
                  "", "", "", "")  # fmt: skip
    names = max((len(r.name) for r in s.drill_syscalls[:rows]), default=7)
    room = max(12, width - names - 34)  # what the name and number columns leave
    for r in sorted(s.drill_syscalls, key=lambda r: (-r.count, r.name))[:rows] if live else []:
        hist = spark(to_log2(s.drill_hist.get(r.nr, {})), room)
        t.add_row(syscall_name(r.name), count(r.count), count(r.rate),
                  approx_duration(r.p99_ns), hist)  # fmt: skip
    return t


def children_line(s: TraceStats, pid: int, width: int) -> Text:
    """``children: PID comm, ...`` of the processes ``pid`` forked while traced (newest
    last; the count says how many forks in all), cut to ``width``."""
    kids = s.tree.children(pid)
    forks = s.tree.forks.get(pid, 0)
    if not kids:
        return data("children: none seen since the trace started")
    names = ", ".join(f"{k} {s.procs[k][0]}" if k in s.procs else str(k) for k in reversed(kids))
    line = Text(f"children ({forks} forks, newest first): ", no_wrap=True, overflow="ellipsis")
    line.append(data(names))
    line.truncate(max(10, width), overflow="ellipsis")
    return line


def startup(steps: list[tuple[str, float]], started: float, now: float, width: int) -> Group:
    """The screen before the first batch: each start-up step (``compiling …``,
    ``attaching``) with how long it took, the current one with how long so far."""
    lines = [Text(f"ringtool trace: starting ({now - started:.1f} s)", style="bold")]
    for i, (what, since) in enumerate(steps):
        until = steps[i + 1][1] if i + 1 < len(steps) else now
        mark = "…" if i + 1 == len(steps) else "done"
        lines.append(Text(f"  {what}  {until - since:.1f} s {mark}"))
    for line in lines:
        line.truncate(width, overflow="ellipsis")
    return Group(*lines)


def footer(view: ViewState) -> Text:
    if view.editing is not None:
        what = "search comm" if view.searching else "filter by comm"
        return Text(f"{what}: {printable(view.editing)}▏ (Enter apply, Esc clear)",
                    style="reverse", no_wrap=True, overflow="ellipsis")  # fmt: skip
    # the state first: a narrow terminal cuts the hints at the end (with …), not it
    state = (" [PAUSED] " if view.paused else "") + (" [keep exited] " if view.keep_exited else "")
    # paused, the state says it (p resumes): its room goes to the keys after it
    pause = "" if view.paused else "  p pause"
    back = "  Esc back" if view.drilling else ""
    tree = "  F5 tree" if not view.tree else "  F5 list"
    return Text(
        f"{state} q quit  ? help{pause}  c cost  < > sort  s sort: {SORTS[view.sort]}  / filter"
        f"{tree}{back}  Enter/n drill",
        style="reverse",
        no_wrap=True,
        overflow="ellipsis",
    )


__all__ = [
    "CPU_WAIT", "SPARKS", "TAIL_TITLE", "TAIL_TYPES", "data", "footer", "header", "shorten_middle",
    "source_label", "sparkline",
    "startup", "table",
]  # fmt: skip
