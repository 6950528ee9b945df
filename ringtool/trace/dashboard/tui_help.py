"""The dashboard's help overlay (``?``/F1): every key, and a legend for every column.

:data:`KEYS` names each key the dashboard handles
(:data:`ringtool.trace.dashboard.tui_view.ACTIONS`, the scroll keys and the aliases, as
:data:`KEY_LABELS` writes them) with what it does;
:data:`LEGEND` says what each column header of every panel means. Tests check that
both are complete. The overlay scrolls with the arrows when the terminal is shorter
than it (any other key closes it).
"""

from __future__ import annotations

import textwrap

from rich.table import Table
from rich.text import Text

from ringtool.trace.dashboard.tui_panels import table
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.report.waits import BLOCKING

#: Every key and what it does (the overlay's first part).
KEYS = (
    ("q Q F10", "quit"),
    ("? F1", "this help (↑ ↓ PgUp PgDn scroll it, other keys close it)"),
    ("p P", "pause the display (counting goes on)"),
    ("/ F4", "filter by comm (Enter applies, Esc clears)"),
    ("F3", "search: select the next process whose comm has it"),
    ("< >  F6", "sort the processes by the column left/right"),
    ("I", "invert the sort order"),
    ("F5", "process tree (children under their parent, as in /proc)"),
    ("e", "keep exited processes (else they leave after a few s)"),
    ("s S", "sort the syscalls: count / rate / p99"),
    ("w", "sort by p99 with the blocking waits (default: without)"),
    ("o O", "order the connections: busiest / newest / longest-lived"),
    ("Tab", "scroll the processes or the recent events"),
    ("↑ ↓ k j  PgUp PgDn", "move in the table"),
    ("Home End  g G", "first / last row (End: follow the newest events)"),
    ("Enter", "drill down into the selected process (exited ones too)"),
    ("n", "drill down by name: every process of the selected comm"),
    ("Esc", "close help or cost panel, leave drill-down, clear filter"),
    ("c", "cost of tracing: BPF run time per program, own CPU"),
    ("mouse", "click a row: select it; click a column header: sort by it"),
)

#: How :data:`KEYS` writes each key name of :mod:`ringtool.trace.dashboard.tui_keys`
#: (names not here are written as they are).
KEY_LABELS = {
    "f1": "F1", "f3": "F3", "f4": "F4", "f5": "F5", "f6": "F6", "f10": "F10", "esc": "Esc",
    "enter": "Enter", "tab": "Tab", "up": "↑", "down": "↓", "pgup": "PgUp", "pgdn": "PgDn",
    "home": "Home", "end": "End",
}  # fmt: skip

_WAITS = ", ".join(sorted(BLOCKING - {"_newselect", "futex_waitv", "epoll_pwait2"}))

#: What each column header means (the overlay's second part; ``▼``/``▲`` mark the sort).
LEGEND = (
    ("CPU", "the CPU number; cost panel: share of one CPU"),
    ("FILL%", "most of the CPU's ring filled in the last interval"),
    ("EV/S", "events per second, last interval (syscalls: slow ones)"),
    ("DROPS", "events dropped since the start (the ring was full)"),
    ("LOST", "perf samples lost since the start (net source)"),
    ("XDROP", "--export: events that did not reach the broker"),
    ("EV/S TREND", "this CPU's events/s over the last intervals"),
    ("PID", "process id (the thread group's); connections: the owner's"),
    ("COMM", "process name (its comm); tree: indented under its parent"),
    ("EVENTS", "events of the process since the start"),
    ("EV/IV", "events of the process in the last interval (one refresh)"),
    ("WAIT99", "--events cpuwait: p99 of the process's waits for a CPU"),
    (
        "NET TX/RX",
        "--events tcp (or net): bytes/s sent/received, last interval; "
        "sorted by their sum (docs/dashboard.md: what is counted)",
    ),
    (
        "DISK R/W",
        "--events disk: bytes/s read/written by its block requests, last "
        "interval; sorted by their sum",
    ),
    ("REMOTE", "drill-down: a connection's remote address:port (open ones first)"),
    ("LPORT", "drill-down: its local port"),
    ("TX", "drill-down: bytes it sent (open: its send calls; closed: acked)"),
    ("RX", "drill-down: bytes it received"),
    ("TIME", "drill-down: how long it lasted (open: so far)"),
    ("STATE", "drill-down: its TCP state; closed, or the socket's error"),
    ("DEVICE", "drill-down: a block device (name major:minor)"),
    ("REQS", "drill-down: the process's requests to it since the start"),
    ("READ", "drill-down: bytes read from it"),
    ("WRITTEN", "drill-down: bytes written to it"),
    ("SVC P99", "drill-down: p99 of their service time (issue to completion)"),
    ("SYSCALL", "syscall name; (wait): a blocking wait, not slow work"),
    ("(wait)", f"blocking waits: {_WAITS}"),
    ("COUNT", "calls since the trace started (all, not only slow ones)"),
    ("/S", "calls per second, last interval"),
    ("P99", "99th percentile latency since the start (within 1.6%); disks: service time"),
    ("LATENCY (log2)", "latency histogram: log2 buckets, shortest left"),
    ("SOURCE", "a --events source"),
    ("TS", "when the event happened (local time, with milliseconds)"),
    ("UID", "the task's real user id (- for packets)"),
    ("TYPE", "the event's type"),
    ("DETAIL", "what it did: path, flags, result, peer"),
    ("PROGRAM", "cost panel: a BPF program of the trace"),
    ("ID", "cost panel: the program's id (bpftool prog show id ID)"),
    ("RUNS", "cost panel: times it ran in the last interval"),
    ("AVG", "cost panel: its average run time"),
    ("WHAT", "cost panel: ringtool's own process"),
    ("LOCAL", "connections: this end's address:port"),
    ("REMOTE", "connections: the peer's address:port"),
    ("TX", "connections: bytes sent and acknowledged (k = 1000)"),
    ("RX", "connections: bytes received (k = 1000)"),
    ("DUR", "connections: from its first state (SYN) to its close"),
    ("DISK", "disks: the block device (its numbers when it has no name)"),
    ("IOPS", "disks: requests completed per second, last interval"),
    ("RD B/S", "disks: bytes read per second, last interval"),
    ("WR B/S", "disks: bytes written per second, last interval"),
)


#: The widest description on one line (80 columns less the key column).
WRAP = 56


def help_lines(view: ViewState | None = None) -> list[tuple[Text, Text]]:
    """The overlay's rows: the keys (and the ``view``'s own: a replay's), then the
    column legend, each under a heading; a description longer than :data:`WRAP` goes
    on in the next rows."""
    rows = [(Text("KEYS", style="bold"), Text(""))]
    keys = KEYS + (view.help_keys if view is not None else ())
    for title, entries in (("KEYS", keys), ("COLUMNS", LEGEND)):
        if title != "KEYS":
            rows.append((Text(title, style="bold"), Text("")))
        for name, does in entries:
            for i, part in enumerate(textwrap.wrap(does, WRAP)):
                rows.append((Text(name if i == 0 else ""), Text(part)))
    return rows


def help_table(view: ViewState, rows: int) -> Table:
    """The overlay in ``rows`` lines (title and heading included), from
    ``view.help_top`` (kept inside the lines)."""
    lines = help_lines(view)
    body = max(1, rows - 3)
    view.help_top = max(0, min(view.help_top, len(lines) - body))
    shown = lines[view.help_top : view.help_top + body]
    where = f"  {view.help_top + 1}-{view.help_top + len(shown)}/{len(lines)}"
    t = table(f"help{where} (↑ ↓ scroll, any other key closes)", ("KEY/COLUMN", "left", 14),
              ("MEANS", "left"), flex="MEANS")  # fmt: skip
    for key, does in shown:
        t.add_row(key, does)
    return t


__all__ = ["KEYS", "KEY_LABELS", "LEGEND", "WRAP", "help_lines", "help_table"]
