"""The dashboard's disks panel: per block device (``--events disk``), requests and
bytes read and written per second over the last interval, and the service time's p99
since the trace started.

The rates count the records of the types in the registry's disks panel
(:data:`ringtool.event.registry.DISKS`: disk, one record per request at its
completion, bpf/trace_disk.c), added up per device with numpy (:func:`per_device`,
no loop per record; the operation from the first of ``rwbs``'s letters, as
:func:`ringtool.event.disk_data.op` reads it). The p99 is the kernel's per-device
histogram (``disk_hist``, every request: :attr:`TraceStats.disk_hist
<ringtool.trace.report.stats.TraceStats.disk_hist>`), within 1.6% as the syscalls'
(:func:`ringtool.trace.reading.latency_buckets.quantile`). The panel counts every
process's requests (the ``/`` filter and the drill-down do not apply: its title then
says ``all processes``); with ``-x`` only failed requests are records, and so counted
in the rates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.table import Table

from ringtool.event.disk_data import dev_text, disk_name
from ringtool.trace.dashboard.tui_panels import Column, data, table
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.reading.latency_buckets import approx_duration, quantile
from ringtool.trace.units import count

Array = np.ndarray[Any, Any]
_R, _W, _F = ord("R"), ord("W"), ord("F")


@dataclass(frozen=True)
class DeviceSums:
    """Per device (``devs``, the kernel's ``dev_t``, ascending): its requests, bytes
    read and bytes written."""

    devs: Array
    requests: Array
    read: Array
    written: Array


def op_letters(rwbs: Array) -> Array:
    """The operation letter (``R``, ``W``, ``D``, ``F``, ``N``) of each ``rwbs``
    (an ``S<n>`` column): its first letter, or the second after a preflush's ``F``."""
    raw = np.ascontiguousarray(rwbs).view(np.uint8).reshape(len(rwbs), -1)
    first, second = raw[:, 0], raw[:, 1]
    preflush = (first == _F) & np.isin(second, np.frombuffer(b"RWDFN", dtype=np.uint8))
    return np.where(preflush, second, first)


def per_device(recs: Array, mine: Array | None = None) -> DeviceSums:
    """``struct trace_disk`` records (those where ``mine`` is true, when given) added
    up per device (see :class:`DeviceSums`); only the columns read are copied."""

    def col(name: str) -> Array:
        return recs[name] if mine is None else recs[name][mine]

    devs, inv = np.unique(col("dev"), return_inverse=True)
    ops = op_letters(col("rwbs"))
    size = col("bytes").astype(np.int64)
    n = len(devs)

    def total(mask: Array) -> Array:
        return np.bincount(inv[mask], weights=size[mask], minlength=n).astype(np.int64)

    requests = np.bincount(inv, minlength=n).astype(np.int64)
    return DeviceSums(devs, requests, total(ops == _R), total(ops == _W))


@dataclass(frozen=True)
class DiskRow:
    """One device's row: name, requests/s, bytes read/s and written/s (the last
    interval) and service-time p99 (ns; NaN: none counted)."""

    dev: int
    name: str
    iops: float
    read_bps: float
    write_bps: float
    p99_ns: float


class Disks:
    """The disks of the records of ``type_ids`` (each viewed as ``dtype``, the types'
    ``struct trace_disk``): sums per interval, rows at each :meth:`tick`."""

    def __init__(self, type_ids: Sequence[int], dtype: np.dtype[Any]) -> None:
        self.type_ids = np.array(type_ids, dtype=np.uint32)
        self.dtype = dtype
        self._sums: dict[int, list[int]] = {}  # dev -> [requests, read, written]
        self._mark: float | None = None  # the last tick (monotonic s)
        self._names: dict[int, str] = {}
        self.rows: list[DiskRow] = []  # replaced whole at each tick (a pause keeps it)

    def add_batch(self, arr: Array) -> None:
        """Add up the requests of a batch of ``struct trace_event`` records."""
        mine = np.isin(arr["h"]["type"], self.type_ids)
        if not mine.any():
            return
        s = per_device(arr.view(self.dtype), None if mine.all() else mine)
        for dev, n, r, w in zip(s.devs.tolist(), s.requests.tolist(), s.read.tolist(),
                                s.written.tolist(), strict=True):  # fmt: skip
            sums = self._sums.setdefault(dev, [0, 0, 0])
            sums[0], sums[1], sums[2] = sums[0] + n, sums[1] + r, sums[2] + w

    def tick(self, hist: Mapping[int, Mapping[int, int]], now: float, start: float) -> None:
        """Close an interval at ``now`` (monotonic s; the first began at ``start``):
        the rows of every device with requests in it or a histogram (``hist``: dev ->
        {bucket: count}, since the start), busiest first."""
        dt = max(now - (start if self._mark is None else self._mark), 1e-6)
        sums, self._sums, self._mark = self._sums, {}, now
        rows = []
        for dev in sorted(set(sums) | set(hist)):
            n, r, w = sums.get(dev, (0, 0, 0))
            buckets = hist.get(dev)
            p99 = quantile(buckets) if buckets else math.nan
            rows.append(DiskRow(dev, self.name(dev), n / dt, r / dt, w / dt, p99))
        self.rows = sorted(rows, key=lambda r: (-r.iops, -(r.read_bps + r.write_bps), r.name))

    def name(self, dev: int) -> str:
        """The device's name (``loop0``), else its numbers (``7:0``); looked up once."""
        if dev not in self._names:
            self._names[dev] = disk_name(dev) or dev_text(dev)
        return self._names[dev]


#: The panel's columns (the first one takes what is left, and is cut with …): they fit
#: in :data:`WIDTH` columns.
COLUMNS: tuple[Column, ...] = (
    ("DISK", "left", 5), ("IOPS", "right", 5), ("RD B/S", "right", 6),
    ("WR B/S", "right", 6), ("P99", "right", 6),
)  # fmt: skip


WIDTH = 42


def disks_table(rows: list[DiskRow], view: ViewState, lines: int) -> Table:
    """The panel: the first ``lines`` of ``rows``."""
    every = " (all processes)" if view.filter or view.drilling else ""
    t = table(f"disks{every}: last interval, p99 since start", *COLUMNS, flex="DISK")
    for r in rows[:lines]:
        t.add_row(data(r.name), count(r.iops), count(r.read_bps), count(r.write_bps),
                  approx_duration(r.p99_ns))  # fmt: skip
    return t


__all__ = [
    "COLUMNS",
    "WIDTH",
    "DeviceSums",
    "DiskRow",
    "Disks",
    "disks_table",
    "op_letters",
    "per_device",
]
