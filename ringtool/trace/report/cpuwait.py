"""The cpuwait source's figures as ringtool prints them: per process and for the
machine, the number of waits for a CPU, their total, p50 and p99, and the log2
histogram (``--hist``, the summary, the dashboard's CPU WAIT column).

The kernel counts waits in log2 slots of microseconds
(:mod:`ringtool.trace.reading.cpuwait_maps`); a quantile is
:func:`~ringtool.trace.report.log_slots.percentile_from_log2`'s, interpolated inside
the slot that holds its rank: the true quantile lies in that slot, so the figure is
within a factor of 2 of it (as runqlat's histogram itself tells no more); the total
is exact (the kernel's sum in ns). The rows print as runqlat prints its histogram
(:func:`~ringtool.trace.report.log_slots.format_log2`, ``usecs``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ringtool.event.safe_text import printable
from ringtool.trace.reading.cpuwait_maps import CpuWaits, WaitHist
from ringtool.trace.reading.latency_buckets import approx, approx_duration
from ringtool.trace.report.log_slots import format_log2, percentile_from_log2, slot_range

#: Processes the text outputs show (the most waiting first).
SHOWN = 10


@dataclass(frozen=True, slots=True)
class WaitRow:
    """One process's (``pid`` 0: the machine's) waits: ``count``, ``total_ns``,
    ``p50_ns``/``p99_ns`` (see the module doc), ``slots`` (log2 µs)."""

    pid: int
    comm: str
    count: int
    total_ns: int
    p50_ns: float
    p99_ns: float
    slots: Mapping[int, int]


def wait_row(pid: int, hist: WaitHist) -> WaitRow:
    """The row of histogram ``hist`` of process ``pid``."""
    p50 = percentile_from_log2(hist.slots, 0.5) * 1000
    p99 = percentile_from_log2(hist.slots, 0.99) * 1000
    return WaitRow(pid, hist.comm, hist.count, hist.total_ns, p50, p99, hist.slots)


@dataclass(frozen=True, slots=True)
class CpuWaitStats:
    """A reading's rows: the machine's, each process's (by pid), ``lost`` waits."""

    machine: WaitRow
    procs: dict[int, WaitRow]
    lost: int

    def top(self, n: int = SHOWN) -> list[WaitRow]:
        """The ``n`` processes that waited longest in total."""
        return sorted(self.procs.values(), key=lambda r: (-r.total_ns, r.pid))[:n]


def cpuwait_stats(waits: CpuWaits) -> CpuWaitStats:
    """The rows of one reading of the kernel's histograms."""
    procs = {pid: wait_row(pid, h) for pid, h in waits.procs.items()}
    return CpuWaitStats(wait_row(0, waits.machine), procs, waits.lost)


def _title(row: WaitRow) -> str:
    who = "all processes" if row.pid == 0 else f"pid {row.pid} {printable(row.comm)}"
    return (f"cpu wait {who}: {row.count:,} waits, total {approx_duration(row.total_ns)}, "
            f"p50 {approx_duration(row.p50_ns)}, p99 {approx_duration(row.p99_ns)}")  # fmt: skip


def summary_lines(stats: CpuWaitStats, n: int = 5) -> list[str]:
    """The summary's lines: the machine's waits, then the ``n`` processes that waited
    longest, and the waits the kernel could not count."""
    lines = [_title(stats.machine)]
    lines += [f"  {printable(r.comm):<16} {r.pid:>8} {r.count:>9} waits  total "
              f"{approx_duration(r.total_ns):>6}  p50 {approx_duration(r.p50_ns):>6}  "
              f"p99 {approx_duration(r.p99_ns):>6}" for r in stats.top(n)]  # fmt: skip
    if stats.lost:
        lines.append(f"cpu wait: {stats.lost} waits not counted (the kernel's maps full)")
    return lines


def hist_lines(stats: CpuWaitStats) -> Iterator[str]:
    """``--hist``: the machine's histogram, then the :data:`SHOWN` processes that
    waited longest, each a title line and its histogram (µs, runqlat's rows)."""
    for row in (stats.machine, *stats.top()):
        yield ""
        yield _title(row)
        yield from format_log2(row.slots, "usecs")


def _record(row: WaitRow) -> dict[str, Any]:
    return {
        "type": "cpuwait_hist",
        "pid": row.pid,
        "comm": row.comm,
        "count": row.count,
        "total_wait_us": round(row.total_ns / 1000, 1),
        "p50_us": approx(row.p50_ns / 1000),
        "p99_us": approx(row.p99_ns / 1000),
        "buckets_us": [[*slot_range(s), n] for s, n in sorted(row.slots.items()) if n],
    }


def cpuwait_summary(stats: CpuWaitStats, n: int = SHOWN) -> dict[str, Any]:
    """The JSON summary's ``cpuwait``: the machine's record (:func:`hist_records`'s,
    without ``type``), the ``n`` processes that waited longest, ``lost``."""
    rec = {k: v for k, v in _record(stats.machine).items() if k not in ("type", "pid", "comm")}
    top = [{k: v for k, v in _record(r).items() if k not in ("type", "buckets_us")}
           for r in stats.top(n)]  # fmt: skip
    return {**rec, "top": top, "lost": stats.lost}


def hist_records(stats: CpuWaitStats) -> Iterator[dict[str, Any]]:
    """``--hist --json``: one ``{"type": "cpuwait_hist", ...}`` object for the machine
    (``pid`` 0) and one per process that waited (the longest total first):
    ``count``, ``total_wait_us`` (exact to 0.1 µs), ``p50_us``/``p99_us`` (2 significant
    digits; within a factor of 2: see the module doc), ``buckets_us`` the used log2
    slots as ``[low_us, high_us, count]`` (inclusive, as runqlat prints them)."""
    yield _record(stats.machine)
    for row in stats.top(len(stats.procs)):
        yield _record(row)


__all__ = ["SHOWN", "CpuWaitStats", "WaitRow", "cpuwait_stats", "cpuwait_summary", "hist_lines",
           "hist_records", "summary_lines", "wait_row"]  # fmt: skip
