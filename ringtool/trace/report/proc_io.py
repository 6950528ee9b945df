"""Each process's network and disk traffic, for the dashboard's NET TX/RX and DISK R/W
columns and its drill-down (:mod:`ringtool.trace.dashboard.tui_netdisk`).

:class:`ProcIO` is fed each batch's records (:meth:`ProcIO.add_batch`, vectorised:
numpy per batch, Python per process of the batch, never per event) and, once per
interval, the kernel's live counters (:meth:`ProcIO.tick`), which make an
:class:`IoFrame`: bytes per second of each process over that interval.

What NET counts, by what runs:

* the tcp source where the kernel has ``sock:sock_send_length`` and
  ``sock:sock_recv_length`` (Linux 6.3 on): live, the bytes each process passed to and
  got from its TCP sockets' send and receive calls in the interval (bpf/trace_tcp.c's
  ``proc_io``, ``live`` of :meth:`ProcIO.tick`): payload only;
* the tcp source without them: a connection's bytes at its close (tcplife's figures,
  tcp_sock.bytes_acked and bytes_received: sequence space, a SYN and FIN one each),
  all in the interval of the close, to the connection's owner;
* the net source alone: the length of each packet, by direction, to the process the
  packet names (pid 0, ``[net]``: packets of no process).

DISK counts each completed block request's bytes (``struct trace_disk``'s ``bytes``)
to its issuer (bpf/trace_disk.c: the submitter from 6.5 on), reads (rwbs ``R``) and
writes (``W``; a preflush before it is the write's flag) apart; other operations
(flush, discard) count as requests only. Per process and device it also keeps the
requests, bytes read and written and a service-time histogram since the trace started
(:func:`ringtool.trace.reading.latency_buckets.bucket_indexes`: its p99 within 1.6%).

The newest :data:`CONNS_KEPT` closed connections of all processes are kept for the
drill-down (their fields it shows, :data:`CONN_FIELDS`: 64 bytes each). The
service-time histograms are counts per bucket of the first
:data:`~ringtool.trace.reading.latency_buckets.FAST_BUCKETS` (a latency over 69 s counts
in the last), for the first :data:`DISK_KEYS` (process, device) pairs seen (another one
has no p99). Pure: never touches the kernel.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ringtool.event.layout import TraceLayout
from ringtool.event.records import NetRecords, Records
from ringtool.trace.reading.latency_buckets import FAST_BUCKETS, bucket_indexes, quantile

#: Closed connections kept (the newest of all processes).
CONNS_KEPT = 65536
#: What is kept of a closed connection (of ``struct trace_tcp``).
CONN_FIELDS = np.dtype([
    ("pid", "<u4"), ("error", "<i4"), ("ts", "<u8"), ("duration_ns", "<u8"),
    ("tx_bytes", "<u8"), ("rx_bytes", "<u8"), ("daddr", "u1", (16,)), ("sport", "<u2"),
    ("dport", "<u2"), ("pad", "u1", (4,)),
])  # fmt: skip
#: (process, device) pairs with a service-time histogram (4 KiB each).
DISK_KEYS = 4096
#: Rates: ``(tx, rx, read, write)`` bytes per second of a process in the last interval.
Rates = tuple[float, float, float, float]
#: The ``rwbs`` letters of a read and a write (the operation, after a preflush ``F``).
_R, _W, _F = ord("R"), ord("W"), ord("F")


@dataclass(frozen=True, slots=True)
class DiskRow:
    """One process's (or, by name, several's) requests to device ``dev`` (the
    kernel's dev_t) since the trace started: ``requests``, bytes ``read`` and
    ``written``, the p99 of their service time (ns; NaN: no histogram, see the module
    doc)."""

    dev: int
    requests: int
    read: int
    written: int
    p99_ns: float


@dataclass(frozen=True, slots=True)
class IoFrame:
    """One interval's figures: ``rates`` by pid (only processes with traffic since the
    trace started), ``net``/``disk``: whether those columns have a source, ``live``:
    NET is counted live (else at each connection's close, or from packets)."""

    rates: Mapping[int, Rates] = field(default_factory=dict)
    net: bool = False
    disk: bool = False
    live: bool = False


def _op_letters(rwbs: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The operation letter of each ``rwbs`` (an S16 column), a preflush skipped."""
    raw = np.ascontiguousarray(rwbs).view(np.uint8).reshape(len(rwbs), -1)
    first, second = raw[:, 0], raw[:, 1]
    return np.where((first == _F) & (second != 0), second, first)


def _sums(keys: np.ndarray[Any, Any], *values: np.ndarray[Any, Any]) -> list[Any]:
    """The distinct ``keys`` and, for each of ``values``, its sum per key (int64)."""
    uniq, inv = np.unique(keys, return_inverse=True)
    return [uniq.tolist()] + [
        np.bincount(inv, weights=v.astype(np.float64), minlength=len(uniq)).astype(np.int64)
        .tolist() for v in values
    ]  # fmt: skip


class ProcIO:
    """The running counts (see the module doc). ``net``: the tcp or net source runs;
    ``tcp``: the tcp source runs (its counts win over the packets'); ``disk``: the
    disk source runs."""

    def __init__(self, layout: TraceLayout, sources: Collection[str]) -> None:
        self.tcp = "tcp" in sources
        self.net = self.tcp or "net" in sources
        self.disk = "disk" in sources
        names = layout.names
        self._tcp_id = layout.type_id("tcp") if "tcp" in names else -1
        self._disk_id = layout.type_id("disk") if "disk" in names else -1
        self._tcp_dtype = layout.views.get(self._tcp_id)
        self._disk_dtype = layout.views.get(self._disk_id)
        #: pid -> bytes since the start: [tx, rx] at closes (or of packets), [read, write],
        #: [tx, rx] of the live counters
        self.totals: dict[int, list[int]] = {}
        #: pid -> [tx, rx] of the kernel's live counters at the last tick
        self._live: dict[int, tuple[int, int]] = {}
        self._marks: dict[int, tuple[int, int, int, int]] = {}
        self._mark_time: float | None = None
        #: (pid, dev) -> [requests, read, written] and its service histogram
        self.disk_counts: dict[tuple[int, int], list[int]] = {}
        self._disk_rows: dict[tuple[int, int], int] = {}  # -> its row of _disk_hist
        self._disk_hist = np.zeros((0, FAST_BUCKETS), np.uint32)
        #: closed connections (:data:`CONN_FIELDS`), the newest last
        self.conns = np.zeros(0, CONN_FIELDS)
        self.frame = IoFrame(net=self.net, disk=self.disk)
        self._frozen: ProcIO | None = None

    # --- feeding -----------------------------------------------------------------------

    def _add(self, pids: list[int], col: int, *sums: list[int]) -> None:
        for i, pid in enumerate(pids):
            row = self.totals.setdefault(pid, [0] * 6)
            for k, s in enumerate(sums):
                row[col + k] += s[i]

    def add(self, records: Records) -> None:
        """Count a batch (:meth:`add_batch` and :meth:`add_net`)."""
        self.add_batch(records.events)
        self.add_net(records.net)

    def add_batch(self, arr: np.ndarray[Any, Any]) -> None:
        """Count a ``struct trace_event`` record array's tcp and disk records."""
        if not len(arr) or not (self.tcp or self.disk):
            return
        types = arr["h"]["type"]
        if self.tcp and self._tcp_dtype is not None and (m := types == self._tcp_id).any():
            self._add_tcp(arr[m].view(self._tcp_dtype))
        if self.disk and self._disk_dtype is not None and (m := types == self._disk_id).any():
            self._add_disk(arr[m].view(self._disk_dtype))

    def _add_tcp(self, rec: np.ndarray[Any, Any]) -> None:
        pids, tx, rx = _sums(rec["h"]["pid"], rec["tx_bytes"], rec["rx_bytes"])
        self._add(pids, 0, tx, rx)
        rec = rec[-CONNS_KEPT:]
        new = np.zeros(len(rec), CONN_FIELDS)
        new["pid"], new["ts"] = rec["h"]["pid"], rec["h"]["ts"]
        for name in ("error", "duration_ns", "tx_bytes", "rx_bytes", "daddr", "sport", "dport"):
            new[name] = rec[name]
        self.conns = np.concatenate((self.conns, new))[-CONNS_KEPT:]

    def _add_disk(self, rec: np.ndarray[Any, Any]) -> None:
        op = _op_letters(rec["rwbs"])
        size = rec["bytes"].astype(np.int64)
        reads, writes = np.where(op == _R, size, 0), np.where(op == _W, size, 0)
        pid = rec["h"]["pid"].astype(np.int64)
        pids, rd, wr = _sums(pid, reads, writes)
        self._add(pids, 2, rd, wr)
        key = (pid << 32) | rec["dev"].astype(np.int64)
        uniq, inv = np.unique(key, return_inverse=True)
        n = np.bincount(inv, minlength=len(uniq)).tolist()
        rd, wr = (np.bincount(inv, weights=v.astype(np.float64), minlength=len(uniq))
                  .astype(np.int64).tolist() for v in (reads, writes))  # fmt: skip
        rows = np.full(len(uniq), -1, np.int64)  # each pair's histogram (-1: none)
        for i, k in enumerate(uniq.tolist()):
            pd = (k >> 32, k & 0xFFFFFFFF)
            row = self.disk_counts.setdefault(pd, [0, 0, 0])
            row[0] += n[i]
            row[1] += rd[i]
            row[2] += wr[i]
            at = self._disk_rows.get(pd)
            if at is None and len(self._disk_rows) < DISK_KEYS:
                at = self._disk_rows[pd] = len(self._disk_rows)
            rows[i] = -1 if at is None else at
        if len(self._disk_rows) > len(self._disk_hist):  # room for the new ones
            more = max(len(self._disk_rows), 2 * len(self._disk_hist)) - len(self._disk_hist)
            self._disk_hist = np.concatenate(
                (self._disk_hist, np.zeros((more, FAST_BUCKETS), np.uint32))
            )
        at_row = rows[inv]
        has = at_row >= 0
        bucket = np.minimum(bucket_indexes(rec["service_ns"]), FAST_BUCKETS - 1)
        np.add.at(self._disk_hist, (at_row[has], bucket[has]), 1)

    def add_net(self, net: NetRecords) -> None:
        """Count a batch's packets, when the tcp source does not run (see the module
        doc): ``len`` by direction (``dir`` 1: sent) to the pid of the packet."""
        if self.tcp or not len(net):
            return
        rec = net.rec
        size = rec["len"].astype(np.int64)
        out = rec["dir"] == 1
        pids, tx, rx = _sums(rec["h"]["pid"], np.where(out, size, 0), np.where(out, 0, size))
        self._add(pids, 0, tx, rx)

    def shown(self, paused: bool) -> ProcIO:
        """What a frame draws: this, or (``paused``) a copy taken at the first paused
        frame, which later batches and ticks leave as it is (once per pause)."""
        if not paused:
            self._frozen = None
            return self
        if self._frozen is None:
            f = self._frozen = copy.copy(self)
            f.disk_counts = {k: list(v) for k, v in self.disk_counts.items()}
            f._disk_rows = dict(self._disk_rows)
            f._disk_hist = self._disk_hist.copy()  # the connections: replaced, not changed
        return self._frozen

    # --- reading -----------------------------------------------------------------------

    def tick(self, now: float, live: Mapping[int, tuple[int, int]] | None = None) -> IoFrame:
        """Close an interval at ``now`` (monotonic s): the rates since the last tick
        (none at the first), NET from ``live`` (the kernel's per-process send/receive
        byte counters, cumulative) when given. A live counter that went back (the
        kernel's LRU map forgot the process, then counted it afresh) counts from 0."""
        if live is not None:
            for pid, (tx, rx) in live.items():
                old = self._live.get(pid, (0, 0))
                row = self.totals.setdefault(pid, [0] * 6)
                row[4] += tx - old[0] if tx >= old[0] else tx
                row[5] += rx - old[1] if rx >= old[1] else rx
            self._live = dict(live)
        net = 4 if live is not None else 0  # the live counters, else closes or packets
        dt = None if self._mark_time is None else max(now - self._mark_time, 1e-6)
        rates: dict[int, Rates] = {}
        marks: dict[int, tuple[int, int, int, int]] = {}
        for pid, row in self.totals.items():
            cur = marks[pid] = (row[net], row[net + 1], row[2], row[3])
            was = self._marks.get(pid, (0, 0, 0, 0))
            rates[pid] = (0.0, 0.0, 0.0, 0.0) if dt is None else (
                (cur[0] - was[0]) / dt, (cur[1] - was[1]) / dt,
                (cur[2] - was[2]) / dt, (cur[3] - was[3]) / dt,
            )  # fmt: skip
        self._marks, self._mark_time = marks, now
        self.frame = IoFrame(rates, self.net, self.disk, live is not None)
        return self.frame

    def disk_rows(self, pids: Collection[int]) -> list[DiskRow]:
        """The requests of processes ``pids`` per device since the trace started,
        their devices added up across the pids; the busiest device first."""
        counts: dict[int, list[int]] = {}
        hists: dict[int, dict[int, int]] = {}
        for (pid, dev), row in self.disk_counts.items():
            if pid in pids:
                acc = counts.setdefault(dev, [0, 0, 0])
                for k in range(3):
                    acc[k] += row[k]
                hist = hists.setdefault(dev, {})
                at = self._disk_rows.get((pid, dev))
                mine = self._disk_hist[at] if at is not None else self._disk_hist[:0, 0]
                for b in np.flatnonzero(mine).tolist():
                    hist[b] = hist.get(b, 0) + int(mine[b])
        rows = [DiskRow(dev, r[0], r[1], r[2], quantile(hists[dev]) if hists[dev] else math.nan)
                for dev, r in counts.items()]  # fmt: skip
        return sorted(rows, key=lambda r: (-(r.read + r.written), -r.requests, r.dev))

    def closed(self, pids: Collection[int]) -> np.ndarray[Any, Any]:
        """The kept closed connections of processes ``pids`` (:data:`CONN_FIELDS`),
        newest first."""
        every = self.conns[np.isin(self.conns["pid"], list(pids))][::-1]
        newest_first: np.ndarray[Any, Any] = every[np.argsort(-every["ts"].astype(np.int64),
                                                              kind="stable")]  # fmt: skip
        return newest_first


__all__ = ["CONNS_KEPT", "CONN_FIELDS", "DISK_KEYS", "DiskRow", "IoFrame", "ProcIO", "Rates"]
