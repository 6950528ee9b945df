"""The process table's columns of the sources: WAIT99 (cpuwait), NET TX/RX (tcp or net)
and DISK R/W (disk), each there only while its source runs, after
:data:`~ringtool.trace.dashboard.tui_view.PROC_COLUMNS`, and sortable like them.

:func:`source_columns` says which, their sort values per pid and :func:`io_cells` a
row's cells. WAIT99 is the p99 of the process's waits for a CPU since the trace
started (:mod:`ringtool.trace.report.cpuwait`); NET TX/RX and DISK R/W are bytes per
second over the last interval, sent/received and read/written
(:mod:`ringtool.trace.report.proc_io` says what each counts), each cell ``TX/RX``
scaled as :func:`ringtool.trace.units.count` writes counts (``12.3k/800``), and sorted
by their sum. ``-``: nothing counted for that process.
"""

from __future__ import annotations

from ringtool.trace.dashboard.tui_view import PROC_COLUMNS
from ringtool.trace.reading.latency_buckets import approx_duration
from ringtool.trace.report.proc_io import IoFrame
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.units import count

#: The columns' headers.
CPU_WAIT, NET, DISK = "WAIT99", "NET TX/RX", "DISK R/W"
#: Their cells' widths: a p99 (:func:`approx_duration`), two counts and a slash.
WIDTHS = {CPU_WAIT: 6, NET: 11, DISK: 11}


def source_columns(
    s: TraceStats | None, io: IoFrame | None
) -> tuple[tuple[str, ...], dict[int, tuple[float, ...]]]:
    """The process table's columns (:data:`PROC_COLUMNS` and those of the sources that
    run) and the sources' columns' sort values by pid."""
    names: list[str] = []
    waits = s.cpuwait if s is not None else None
    if waits is not None:
        names.append(CPU_WAIT)
    net = io is not None and io.net
    disk = io is not None and io.disk
    names += [NET] * net + [DISK] * disk
    values: dict[int, tuple[float, ...]] = {}
    if not names:
        return PROC_COLUMNS, values
    pids = set(waits.procs) if waits is not None else set()
    rates = io.rates if io is not None else {}
    for pid in pids | set(rates):
        row: list[float] = []
        if waits is not None:
            w = waits.procs.get(pid)
            row.append(w.p99_ns if w is not None else -1.0)
        r = rates.get(pid)
        if net:
            row.append(r[0] + r[1] if r is not None else -1.0)
        if disk:
            row.append(r[2] + r[3] if r is not None else -1.0)
        values[pid] = tuple(row)
    return (*PROC_COLUMNS, *names), values


def io_cells(s: TraceStats | None, io: IoFrame | None, columns: tuple[str, ...],
             pid: int) -> list[str]:  # fmt: skip
    """The cells of process ``pid`` in the sources' ``columns``."""
    cells = []
    r = io.rates.get(pid) if io is not None else None
    for name in columns[len(PROC_COLUMNS) :]:
        if name == CPU_WAIT:
            w = s.cpuwait.procs.get(pid) if s is not None and s.cpuwait is not None else None
            cells.append(approx_duration(w.p99_ns) if w is not None else "-")
        elif r is None:
            cells.append("-")
        else:
            a, b = (r[0], r[1]) if name == NET else (r[2], r[3])
            cells.append(f"{count(a)}/{count(b)}")
    return cells


__all__ = ["CPU_WAIT", "DISK", "NET", "WIDTHS", "io_cells", "source_columns"]
