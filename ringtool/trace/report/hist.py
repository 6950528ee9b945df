"""Syscall latency histograms, and the disk source's service times per block device,
as bcc's tools print them (``--hist``) and as one-line sparklines (the dashboard's
drill-down).

The syscalls and disk sources count latencies in log-linear buckets
(:mod:`ringtool.trace.reading.latency_buckets`); the rows and sparklines merge them into log2
slots of nanoseconds (``bpf_log2l``): slot ``s`` >= 1 holds latencies in
``[2**(s-1), 2**s)``, slot 0 a latency of 0. The ranges are printed as bcc's
``print_log2_hist`` does (``low -> high`` inclusive, the first row ``0 -> 1``), so the
output reads like bcc's ``funclatency`` (a function's latency in log2 slots), one
histogram per syscall. The p99
comes from the fine buckets (within 1.6%) and is printed with 2 significant digits;
``--json`` gives the fine buckets themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ringtool.event import disk_data
from ringtool.trace.reading.latency_buckets import (
    MAX_ERROR,
    approx,
    approx_duration,
    bucket_range,
    quantile,
    to_log2,
)
from ringtool.trace.report.log_slots import BAR, format_log2, slot_range
from ringtool.trace.report.stats import SyscallRow, TraceStats
from ringtool.trace.units import duration_ns

#: Sparkline characters, low to high.
SPARKS = "▁▂▃▄▅▆▇█"


def spark(buckets: Mapping[int, int], width: int) -> str:
    """``"1µs ▁▃█▂ 65µs"``: the used slots' counts as a sparkline between the lowest
    and highest latency, at most ``width`` characters (the bars are cut first; when
    fewer than 3 would be left, the lowest latency is left out: ``"▁▃█▂ 65µs"``)."""
    used = sorted(s for s, n in buckets.items() if n > 0)
    if not used:
        return ""
    lo, hi = used[0], used[-1]
    counts = [buckets.get(s, 0) for s in range(lo, hi + 1)]
    peak = max(counts)
    left = duration_ns(float(slot_range(lo)[0]))
    right = duration_ns(float(slot_range(hi)[1] + 1))
    bars = "".join(SPARKS[min(7, (c * 8 - 1) // peak)] if c else " " for c in counts)
    room = width - len(left) - len(right) - 2
    if room < 3:
        return f"{bars[: max(1, width - len(right) - 1)]} {right}"
    return f"{left} {bars[:room]} {right}"


def _ordered(stats: TraceStats) -> list[SyscallRow]:
    return sorted(stats.syscalls, key=lambda r: (-r.count, r.name))


def hist_lines(stats: TraceStats) -> Iterator[str]:
    """``--hist`` at the end: per syscall, most called first, a title line and its
    histogram (nanoseconds); then per block device (the disk source), by its numbers,
    its requests' service times."""
    for row in _ordered(stats):
        buckets = stats.sys_hist.get(row.nr, {})
        if not row.count:
            continue
        yield ""
        yield f"syscall {row.name}: {row.count:,} calls, p99 {approx_duration(row.p99_ns)}"
        yield from format_log2(to_log2(buckets))
    for dev, buckets in sorted(stats.disk_hist.items()):
        count = sum(buckets.values())
        if not count:
            continue
        name = disk_data.disk_name(dev)
        where = f"{name} ({disk_data.dev_text(dev)})" if name else disk_data.dev_text(dev)
        yield ""
        yield (f"disk {where}: {count:,} requests, service time p99 "
               f"{approx_duration(quantile(buckets))}")  # fmt: skip
        yield from format_log2(to_log2(buckets))


def hist_records(stats: TraceStats) -> Iterator[dict[str, Any]]:
    """``--hist --json`` at the end: one ``{"type": "hist", ...}`` object per syscall,
    most called first (``syscall``: its name), then per block device (``dev``:
    ``"major:minor"``, ``disk``: its name or ``""``; the disk source's service times);
    ``p99_us`` with 2 significant digits (microseconds, as every latency of the JSON
    lines), ``p99_max_error`` the estimate's bound (a fraction of the true value),
    ``buckets`` the used fine buckets as ``[low_ns, high_ns, count]`` (inclusive: the
    kernel's bucket bounds, exact in nanoseconds)."""
    for row in _ordered(stats):
        buckets = stats.sys_hist.get(row.nr, {})
        yield {
            "type": "hist",
            "syscall": row.name,
            "count": row.count,
            "p99_us": approx(row.p99_ns / 1000),
            "p99_max_error": MAX_ERROR,
            "buckets": [[*bucket_range(i), n] for i, n in sorted(buckets.items()) if n],
        }
    for dev, buckets in sorted(stats.disk_hist.items()):
        yield {
            "type": "hist",
            "dev": disk_data.dev_text(dev),
            "disk": disk_data.disk_name(dev),
            "count": sum(buckets.values()),
            "p99_us": approx(quantile(buckets) / 1000),
            "p99_max_error": MAX_ERROR,
            "buckets": [[*bucket_range(i), n] for i, n in sorted(buckets.items()) if n],
        }


__all__ = ["BAR", "format_log2", "hist_lines", "hist_records", "slot_range", "spark"]
