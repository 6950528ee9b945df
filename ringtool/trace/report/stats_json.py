"""The JSON records of a trace's statistics: the periodic ``{"type": "stats", ...}``
line and the final ``{"type": "summary", ...}`` object, built from a
:class:`~ringtool.trace.report.stats.TraceStats` (the ``--json`` output, the quiet output's
summary and the bench's child read them)."""

from __future__ import annotations

from typing import Any

from ringtool.trace.reading.latency_buckets import approx
from ringtool.trace.report.cpuwait import cpuwait_summary
from ringtool.trace.report.stats import TraceStats


def stats_record(stats: TraceStats) -> dict[str, Any]:
    """The periodic ``{"type": "stats", ...}`` JSON object (with ``ordering`` under
    ``--ordered``)."""
    record = _stats_fields(stats)
    if stats.ordering is not None:
        record["ordering"] = stats.ordering
    if stats.rings is not None:
        record["rings"] = stats.rings
    if stats.cost is not None:
        record["cost"] = stats.cost.interval_record()
    if stats.export is not None:
        record["export"] = stats.export
        for row in record["per_cpu"]:
            per = stats.export["export_dropped_per_cpu"]
            row["export_dropped"] = per[row["cpu"]] if row["cpu"] < len(per) else 0
    return record


def _stats_fields(stats: TraceStats) -> dict[str, Any]:
    return {
        "type": "stats",
        "uptime_s": round(stats.interval_end, 3),  # the interval's end
        "events": stats.total,
        "events_per_s": round(stats.rate_total, 1),
        "per_source_per_s": {k: round(v, 1) for k, v in stats.rate_source.items()},
        "per_cpu": [_cpu_record(stats, cpu) for cpu in range(stats.ncpu)],
        "dropped": stats.dropped,
        "lost": stats.lost,
        "dropped_interval": stats.dropped_interval,
        "lost_interval": stats.lost_interval,
        **({o.key: o.total} if (o := stats.overwritten) is not None else {}),
        "malformed": stats.malformed,
        "top_syscalls": [
            {"syscall": r.name, "count": r.count, "p99_us": approx(r.p99_ns / 1000)}
            for r in stats.top_syscalls(5)
        ],
    }


def _cpu_record(stats: TraceStats, cpu: int) -> dict[str, Any]:
    return {
        "cpu": cpu,
        "events_per_s": round(stats.rate_cpu[cpu], 1),
        "fill_pct": round(100 * stats.fill_cpu.get(cpu, 0.0), 1),
        "drops": stats.drops_cpu[cpu],
        "drops_interval": stats.drops_cpu_interval[cpu],
        "lost": stats.lost_cpu.get(cpu, 0),
    }


def summary_record(stats: TraceStats) -> dict[str, Any]:
    """The final ``{"type": "summary", ...}`` JSON object: ``events`` is the number
    of events emitted, ``dropped``/``lost`` what the kernel could not deliver, and
    for a flight recorder ``overwritten`` (or, a lower bound, ``overwritten_min``)
    what its rings overwrote before a dump wrote it (:class:`Overwritten`)."""
    return {
        "type": "summary",
        "events": stats.total,
        "dropped": stats.dropped,
        "lost": stats.lost,
        **(stats.overwritten.record() if stats.overwritten is not None else {}),
        "malformed": stats.malformed,
        "duration_s": round(stats.uptime, 3),
        "by_type": dict(sorted(stats.by_type.items())),
        "dropped_by_source": stats.drops_source,
        "dropped_by_source_per_cpu": stats.drops_source_cpu,
        "dropped_per_cpu": stats.drops_cpu,
        "lost_per_cpu": {str(k): v for k, v in sorted(stats.lost_cpu.items())},
        "drop_intervals": stats.drop_intervals,
        "drops_at": [vars(m) for m in stats.drop_log],
        "sources": stats.sources,
        **({"ordering": stats.ordering} if stats.ordering is not None else {}),
        **({"rings": stats.rings} if stats.rings is not None else {}),
        **({"export": stats.export} if stats.export is not None else {}),
        **({"cost": stats.cost.record()} if stats.cost is not None else {}),
        **({"cpuwait": cpuwait_summary(stats.cpuwait)} if stats.cpuwait is not None else {}),
    }


__all__ = ["stats_record", "summary_record"]
