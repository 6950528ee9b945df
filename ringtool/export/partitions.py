"""The layout of ``collect --record DIR``: Hive-style partitions by host and hour.

Every event goes to ``DIR/host=<host>/date=<YYYY-MM-DD>/hour=<HH>/`` of its own
wall-clock time (UTC: its kernel stamp plus the realtime offset its message carried),
so a batch that straddles an hour is split (:func:`split_by_hour`, numpy masks, no
Python per event). The names are what Hive, Spark, Trino and DuckDB's
``hive_partitioning`` read as the columns ``host``, ``date`` and ``hour``
(:func:`partition_values` reads them back). Host names are subject tokens (letters,
digits, ``_``, ``-``: :func:`ringtool.export.config.is_token`), so a name is one
path component that needs no escaping.

Files of a partition: ``<run>.<NNNN>.arrows`` while written (an Arrow IPC stream: a
cut one reads back to its last whole batch) and ``<run>.<NNNN>.parquet`` once closed
(:mod:`ringtool.export.parquet_seal`); ``<run>`` is the exporting run's id, ``NNNN``
the first number free in the directory.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np

from ringtool.event.records import Records

#: An hour, ns.
HOUR_NS = 3600 * 10**9
#: The suffixes of a partition's files: being written (or cut), closed.
STREAM_SUFFIX, SEALED_SUFFIX = ".arrows", ".parquet"
#: The partition keys, outermost first.
KEYS = ("host", "date", "hour")


def hour_dirs(host: str, hour: int) -> tuple[str, str, str]:
    """The three directory names of ``host``'s partition of hour number ``hour``
    (hours since the UNIX epoch, UTC)."""
    when = dt.datetime.fromtimestamp(hour * 3600, dt.UTC)
    return f"host={host}", f"date={when:%Y-%m-%d}", f"hour={when:%H}"


def file_name(run: str, number: int, suffix: str = STREAM_SUFFIX) -> str:
    """``<run>.<NNNN><suffix>``: file ``number`` (from 1) of ``run`` in a partition."""
    return f"{run}.{number:04d}{suffix}"


def _hours(ts: np.ndarray[Any, Any], offset_ns: int) -> np.ndarray[Any, Any]:
    return (ts.astype(np.int64) + np.int64(offset_ns)) // HOUR_NS


def split_by_hour(records: Records, offset_ns: int) -> list[tuple[int, Records]]:
    """``records`` cut by the hour of each record's wall-clock time (``h.ts`` plus
    ``offset_ns``): ``(hour number, its records)`` in hour order, each in the order
    it came; one piece (no copy) when they are all of one hour."""
    ev_h = _hours(records.events["h"]["ts"], offset_ns) if len(records.events) else None
    net_h = _hours(records.net.rec["h"]["ts"], offset_ns) if len(records.net) else None
    found = [h for h in (ev_h, net_h) if h is not None]
    if not found:
        return []
    hours = np.unique(np.concatenate(found))
    if len(hours) == 1:
        return [(int(hours[0]), records)]
    out = []
    for hour in hours:
        events = records.events[ev_h == hour] if ev_h is not None else records.events
        net = records.net.take(net_h == hour) if net_h is not None else records.net
        out.append((int(hour), Records(events, net)))
    return out


def partition_values(path: Path, root: Path) -> dict[str, str]:
    """The ``key=value`` directories of ``path`` below ``root`` (``host``, ``date``,
    ``hour`` for a file of ``collect --record``)."""
    out = {}
    for part in path.relative_to(root).parts[:-1]:
        key, eq, value = part.partition("=")
        if eq and key:
            out[key] = value
    return out


__all__ = [
    "HOUR_NS",
    "KEYS",
    "SEALED_SUFFIX",
    "STREAM_SUFFIX",
    "file_name",
    "hour_dirs",
    "partition_values",
    "split_by_hour",
]
