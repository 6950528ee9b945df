"""A run's origin and the body of its ``stats/1`` messages, shared by the exporters
(:class:`~ringtool.export.proc_sink.ProcExportSink` of ``trace --export``, the bridge's
:mod:`~ringtool.export.bridge_hook`)."""

from __future__ import annotations

import secrets
import time
from collections import deque
from typing import Any

from ringtool.export.accounting import TraceTotals
from ringtool.export.config import ExportConfig, boot_id
from ringtool.export.wire import Origin


def new_origin(cfg: ExportConfig, source: str, realtime_offset_ns: int) -> Origin:
    return Origin(cfg.host, boot_id(), secrets.token_hex(6), source, realtime_offset_ns)


def take_all(notes: deque[str]) -> list[str]:
    """Empty ``notes`` (appended by other threads), oldest first."""
    out = []
    while notes:
        out.append(notes.popleft())
    return out


def host_stats(origin: Origin, stats: TraceTotals, kind: str,
               record: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The body of a ``stats/1`` message of ``kind`` (``stats``, ``summary``): the
    trace's counts and the exporter's ``record``."""
    o = origin
    return {
        "kind": kind, "host": o.host, "boot": o.boot, "run": o.run, "source": o.source,
        "time": time.time(), "events": stats.total, "dropped": stats.dropped,
        "lost": stats.lost, "dropped_per_cpu": list(stats.drops_cpu),
        "lost_per_cpu": {str(k): v for k, v in stats.lost_cpu.items()},
        "events_per_s": round(stats.rate_total, 1),
        **record,
    }  # fmt: skip


__all__ = ["host_stats", "new_origin", "take_all"]
