"""The drill-down's sections of the tcp, disk and cpuwait sources, below its syscalls:
the process's TCP connections, its block I/O per device and its run-queue waits.

* connections (tcp): the open ones first, read from bpf/trace_tcp.c's ``conns`` only
  while the drill-down is open (:func:`ringtool.trace.reading.tcp_maps.read_conns`:
  those whose owner is known, with their newest state and the bytes of their send and
  receive calls where the kernel counts them), then the closed ones, newest first
  (:meth:`ringtool.trace.report.proc_io.ProcIO.closed`: at the close, tcp_sock's
  bytes_acked and bytes_received); each with the remote address and port, the local
  port, bytes sent and received, how long it lasted (an open one: so far) and its state
  (a closed one: ``closed``, or the socket's error);
* disk (disk): requests, bytes read and written and the p99 of their service time per
  device since the trace started (:meth:`~ringtool.trace.report.proc_io.ProcIO.disk_rows`);
* run queue (cpuwait): the number of the process's waits for a CPU, p50 and p99, and
  their log2 histogram as a sparkline (bpf/trace_cpuwait.c's ``proc_wait``).

Each section is there only while its source runs; addresses and device names are data
(:func:`ringtool.trace.dashboard.tui_panels.data`).
"""

from __future__ import annotations

import time
from collections.abc import Collection
from typing import Any

import numpy as np
from rich.console import Group, RenderableType
from rich.layout import Layout
from rich.table import Table
from rich.text import Text

from ringtool.event.disk_data import dev_text, disk_name
from ringtool.event.tcp_data import STATE_NAMES, address, errno_name
from ringtool.trace.dashboard.tui_iocols import DISK, NET, WIDTHS
from ringtool.trace.dashboard.tui_panels import (
    cpu_table,
    data,
    drill_table,
    syscalls_table,
    table,
)
from ringtool.trace.dashboard.tui_view import PROC_COLUMNS, ViewState
from ringtool.trace.reading.cpuwait_maps import WaitHist
from ringtool.trace.reading.latency_buckets import approx_duration
from ringtool.trace.report.cpuwait import wait_row
from ringtool.trace.report.hist import spark
from ringtool.trace.report.proc_io import ProcIO
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.units import count

#: Rows of each section at most (the connections: open ones first).
SECTION_ROWS = 4
#: The process table's room for a name when it has NET or DISK columns
#: (:func:`top_row`): PID 8, EVENTS and EV/IV 6 each, then the sources' columns.
COMM_ROOM = 12


def _conn_rows(
    s: TraceStats, io: ProcIO, pids: Collection[int], now_ns: int
) -> tuple[list[list[str]], int]:
    """The connection rows: the open ones (newest first), then the closed ones; and
    how many are open."""
    rows = []
    live: np.ndarray[Any, Any] | None = s.drill_conns
    if live is not None:  # read for the drill-down of the last interval: maybe another
        live = live[np.isin(live["pid"], list(pids))]
    for c in live[::-1] if live is not None else ():
        state = int(c["state"])
        rows.append([f"{address(bytes(c['daddr']))}:{int(c['dport'])}", str(int(c["sport"])),
                     count(int(c["tx_bytes"])), count(int(c["rx_bytes"])),
                     approx_duration(max(0, now_ns - int(c["start_ns"]))),
                     STATE_NAMES.get(state, str(state))])  # fmt: skip
    for c in io.closed(pids)[: SECTION_ROWS * 2]:
        err = int(c["error"])
        rows.append([f"{address(bytes(c['daddr']))}:{int(c['dport'])}", str(int(c["sport"])),
                     count(int(c["tx_bytes"])), count(int(c["rx_bytes"])),
                     approx_duration(float(c["duration_ns"])),
                     errno_name(err) if err else "closed"])  # fmt: skip
    return rows, len(live) if live is not None else 0


def conns_table(s: TraceStats, io: ProcIO, pids: Collection[int], rows: int) -> Table:
    """The connections section (see the module doc) in ``rows`` rows."""
    found, n_open = _conn_rows(s, io, pids, time.monotonic_ns())
    live = "" if s.tcp_io is not None else " (no live bytes: kernel before 6.3)"
    t = table(f"connections: {n_open} open, {len(found) - n_open} closed shown{live}",
              ("REMOTE", "left"), ("LPORT", "right", 5), ("TX", "right", 5),
              ("RX", "right", 5), ("TIME", "right", 6), ("STATE", "left"),
              flex="REMOTE")  # fmt: skip
    if not found:
        t.add_row(data("none seen since the trace started"), "", "", "", "", "")
    for r in found[:rows]:
        t.add_row(data(r[0]), *r[1:5], data(r[5]))
    return t


def disk_table(io: ProcIO, pids: Collection[int], rows: int) -> Table:
    """The disk section (see the module doc) in ``rows`` rows."""
    found = io.disk_rows(pids)
    t = table("disk I/O since the trace started", ("DEVICE", "left"), ("REQS", "right", 5),
              ("READ", "right", 5), ("WRITTEN", "right", 5), ("SVC P99", "right", 6),
              flex="DEVICE")  # fmt: skip
    if not found:
        t.add_row(data("no request completed"), "", "", "", "")
    for r in found[:rows]:
        name = disk_name(r.dev)
        t.add_row(data(f"{name} {dev_text(r.dev)}" if name else dev_text(r.dev)),
                  count(r.requests), count(r.read), count(r.written),
                  approx_duration(r.p99_ns))  # fmt: skip
    return t


def runq_line(s: TraceStats, pids: Collection[int], width: int) -> Text:
    """The run-queue section: one line (see the module doc)."""
    waits = s.cpuwait
    hists = [waits.procs[p] for p in pids if waits is not None and p in waits.procs]
    if not hists:
        return Text("run queue: no wait for a CPU counted", no_wrap=True, overflow="ellipsis")
    slots: dict[int, int] = {}
    for h in hists:
        for k, v in h.slots.items():
            slots[k] = slots.get(k, 0) + v
    n, total = sum(h.count for h in hists), sum(h.total_ns for h in hists)
    row = wait_row(0, WaitHist(slots, n, total))
    head = (f"run queue: {count(n)} waits, p50 {approx_duration(row.p50_ns)}, "
            f"p99 {approx_duration(row.p99_ns)}  ")  # fmt: skip
    # spark() reads slots of ns: a slot of µs is 10 slots higher (2**10 ns, 2.4% more
    # than a µs: its range labels are that much high)
    bars = spark({k + 10 if k else 0: v for k, v in slots.items()}, max(12, width - len(head) - 2))
    return Text(head + bars, no_wrap=True, overflow="ellipsis")


def sections(
    s: TraceStats | None, io: ProcIO | None, pids: Collection[int], width: int
) -> list[RenderableType]:
    """The drill-down's sections of the sources that run (none: an empty list)."""
    if s is None or io is None:
        return []
    out: list[RenderableType] = []
    if io.tcp:
        out.append(conns_table(s, io, pids, SECTION_ROWS))
    if io.disk:
        out.append(disk_table(io, pids, SECTION_ROWS // 2))
    if s.cpuwait is not None:
        out.append(runq_line(s, pids, width))
    return out


def drill_panel(
    s: TraceStats | None, io: ProcIO | None, view: ViewState, rows: int, width: int
) -> RenderableType:
    """The drill-down in ``width`` columns: its syscalls table
    (:func:`ringtool.trace.dashboard.tui_panels.drill_table`, ``rows`` rows) and, below
    it, the sections of its processes (``view.drill_pids``)."""
    drill = drill_table(s, view, rows, width)
    more = sections(s, io, view.drill_pids(s), width)
    return Group(drill, *more) if more else drill


def drill_row(
    row: Layout,
    s: TraceStats | None,
    io: ProcIO | None,
    view: ViewState,
    rows: int,
    more: int,
    width: int,
) -> None:
    """Fill ``row`` (``rows`` rows, ``more`` of them the sections') with the
    drill-down: its histograms need room: 2/3 of the row beside the syscalls of all
    processes, or all of it below 120 columns."""
    wide = width >= 120
    drill = drill_panel(s, io, view, rows - more, width * 2 // 3 if wide else width)
    if wide:
        row.split_row(Layout(drill, ratio=2), Layout(syscalls_table(s, view, rows), ratio=1))
    else:
        row.update(drill)


def drill_room(
    s: TraceStats | None, io: ProcIO | None, view: ViewState, rows_b: int, rows_tail: int
) -> tuple[int, int, int]:
    """The rows of the second row of tables and of the event tail when the drill-down
    shows its sections (:func:`section_lines`, taken from the tail, which keeps a row),
    and how many that is: ``(rows_b, rows_tail, more)``."""
    more = min(section_lines(s, io), rows_tail - 1) if view.drilling else 0
    return rows_b + more, rows_tail - more, more


def top_row(
    s: TraceStats | None, view: ViewState, procs: RenderableType, rows: int, width: int
) -> list[Layout]:
    """The per-CPU table and the process table side by side (as many CPUs as
    ``rows``). With NET or DISK columns the process table needs more room (its columns
    and a :data:`COMM_ROOM` name): half of the row where that is enough, else 2/3 of it
    from 120 columns, else all of it (the per-CPU table is left out; the sources table
    still says the drops)."""
    ncpu = s.ncpu if s is not None else 1
    table_ = Layout(procs, name="procs")
    extra = view.columns[len(PROC_COLUMNS) :]
    need = 20 + sum(WIDTHS[c] for c in extra) + 2 * len(view.columns) + COMM_ROOM
    if not (NET in extra or DISK in extra) or width // 2 >= need:
        return [Layout(cpu_table(s, view, min(ncpu, rows), width)), table_]
    if width < 120 or width * 2 // 3 < need:
        return [table_]
    third = width // 3  # cpu_table sizes its trend column for half of its width argument
    table_.ratio = 2
    return [Layout(cpu_table(s, view, min(ncpu, rows), 2 * third)), table_]


def section_lines(s: TraceStats | None, io: ProcIO | None) -> int:
    """The lines :func:`sections` takes (title, header, rule and rows of each table)."""
    if s is None or io is None:
        return 0
    return (io.tcp * (3 + SECTION_ROWS) + io.disk * (3 + SECTION_ROWS // 2)
            + (s.cpuwait is not None))  # fmt: skip


__all__ = ["COMM_ROOM", "SECTION_ROWS", "ProcIO", "conns_table", "disk_table", "drill_panel",
           "drill_room", "drill_row", "runq_line", "section_lines", "sections",
           "top_row"]  # fmt: skip
