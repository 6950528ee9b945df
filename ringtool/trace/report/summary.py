"""The summary at the end of a trace: the lines every text output and the dashboard
print (totals, drops, export, ordering, cost, ring switches, the top syscalls), each cut
to a width with :func:`cut` (:mod:`ringtool.event.detail_fit`'s, with its ``…``)."""

from __future__ import annotations

from ringtool.event.detail_fit import ELLIPSIS, cut
from ringtool.trace.reading.latency_buckets import approx_duration
from ringtool.trace.report.cpuwait import summary_lines
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.units import size_text


def format_summary(stats: TraceStats, width: int | None = 80) -> list[str]:
    """The summary's lines, each cut to ``width`` characters (None: whole)."""
    lines = [
        f"{stats.total} events in {stats.uptime:.1f}s, {stats.dropped} dropped, {stats.lost} lost"
        + (f", {stats.overwritten.text()}" if stats.overwritten is not None else "")
        + (f", {stats.malformed} malformed" if stats.malformed else ""),
        "by type: " + (", ".join(f"{k} {v}" for k, v in sorted(stats.by_type.items())) or "-"),
    ]
    if stats.drops_source and any(stats.drops_source.values()):
        lines.append(
            "dropped by source: " + ", ".join(f"{k} {v}" for k, v in stats.drops_source.items())
        )
    if stats.export is not None:
        x = stats.export
        why = ", ".join(f"{k} {v}" for k, v in x["export_dropped_by_reason"].items() if v)
        lines.append(f"export: {x['exported']} exported, {x['export_dropped']} export_dropped"
                     + (f" ({why})" if why else ""))  # fmt: skip
    if stats.ordering is not None:
        o = stats.ordering
        lines.append(
            f"ordered: {o['out_of_order']} out of order "
            f"(per CPU ring {o['out_of_order_per_buffer']}), max {o['max_lateness_us']} us late"
        )
    if stats.cost is not None:
        lines.append(stats.cost.line())
    if stats.rings is not None and stats.rings["switches"]:
        lines.append("rings: " + ", ".join(
            f"cpu {r['cpu']} {size_text(r['bytes'])} ({r['grown']} grown, {r['shrunk']} "
            f"shrunk, peak {size_text(r['peak_bytes'])})"
            for r in stats.rings["per_cpu"] if r["grown"] or r["shrunk"]))  # fmt: skip
    for row in stats.top_syscalls(5):
        lines.append(
            f"  {row.name:<20} {row.count:>10} calls  p99 {approx_duration(row.p99_ns):>6}"
        )
    if stats.cpuwait is not None:
        lines += summary_lines(stats.cpuwait)
    return [cut(line, width) for line in lines]


__all__ = ["ELLIPSIS", "cut", "format_summary"]
