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

Each process's newest :data:`CONNS_KEPT` closed connections (tcp records, copied) are
kept for the drill-down, of the :data:`CONN_PROCS` processes whose connections closed
last. Pure: never touches the kernel.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ringtool.event.layout import TraceLayout
from ringtool.event.records import NetRecords, Records
from ringtool.trace.reading.latency_buckets import bucket_indexes, quantile

#: Closed connections kept per process (its newest), and processes kept (those whose
#: newest connection closed last).
CONNS_KEPT, CONN_PROCS = 16, 4096
#: Rates: ``(tx, rx, read, write)`` bytes per second of a process in the last interval.
Rates = tuple[float, float, float, float]
#: The ``rwbs`` letters of a read and a write (the operation, after a preflush ``F``).
_R, _W, _F = ord("R"), ord("W"), ord("F")


@dataclass(frozen=True, slots=True)
class DiskRow:
    """One process's (or, by name, several's) requests to device ``dev`` (the
    kernel's dev_t) since the trace started: ``requests``, bytes ``read`` and
    ``written``, the p99 of their service time (ns)."""

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
        self.disk_hist: dict[tuple[int, int], dict[int, int]] = {}
        #: pid -> its closed connections, newest last (copies)
        self.conns: dict[int, np.ndarray[Any, Any]] = {}
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
        pid = rec["h"]["pid"]
        order = np.argsort(pid, kind="stable")  # each pid's records together, in order
        ends = np.searchsorted(pid[order], pids, side="right")
        for p, end in zip(pids, ends.tolist(), strict=True):
            newest = rec[order[max(0, end - CONNS_KEPT) : end]]
            newest = newest[newest["h"]["pid"] == p]  # not the previous pid's
            old = self.conns.pop(p, None)  # re-inserted: the newest process last
            kept = newest if old is None else np.concatenate((old, newest))
            self.conns[p] = kept[-CONNS_KEPT:].copy()
        while len(self.conns) > CONN_PROCS:
            del self.conns[next(iter(self.conns))]

    def _add_disk(self, rec: np.ndarray[Any, Any]) -> None:
        op = _op_letters(rec["rwbs"])
        size = rec["bytes"].astype(np.int64)
        reads, writes = np.where(op == _R, size, 0), np.where(op == _W, size, 0)
        pid = rec["h"]["pid"].astype(np.int64)
        pids, rd, wr = _sums(pid, reads, writes)
        self._add(pids, 2, rd, wr)
        key = (pid << 32) | rec["dev"].astype(np.int64)
        keys, n, rd, wr = _sums(key, np.ones(len(rec), np.int64), reads, writes)
        for i, k in enumerate(keys):
            row = self.disk_counts.setdefault((k >> 32, k & 0xFFFFFFFF), [0, 0, 0])
            row[0] += n[i]
            row[1] += rd[i]
            row[2] += wr[i]
        # the service histogram: one count per (process, device, bucket) of the batch
        both = np.stack((key, bucket_indexes(rec["service_ns"])), axis=1)
        pairs, counts = np.unique(both, axis=0, return_counts=True)
        for (k, b), c in zip(pairs.tolist(), counts.tolist(), strict=True):
            hist = self.disk_hist.setdefault((k >> 32, k & 0xFFFFFFFF), {})
            hist[b] = hist.get(b, 0) + c

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
            f.conns = dict(self.conns)  # arrays replaced whole, never changed in place
            f.disk_counts = {k: list(v) for k, v in self.disk_counts.items()}
            f.disk_hist = {k: dict(v) for k, v in self.disk_hist.items()}
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
                for b, c in self.disk_hist.get((pid, dev), {}).items():
                    hist[b] = hist.get(b, 0) + c
        rows = [DiskRow(dev, r[0], r[1], r[2], quantile(hists[dev])) for dev, r in counts.items()]
        return sorted(rows, key=lambda r: (-(r.read + r.written), -r.requests, r.dev))

    def closed(self, pids: Collection[int]) -> np.ndarray[Any, Any]:
        """The kept closed connections of processes ``pids`` (tcp records), newest
        first."""
        mine = [self.conns[p] for p in pids if p in self.conns]
        if not mine:
            return np.zeros(0, self._tcp_dtype)
        every = np.concatenate(mine)[::-1]  # each one's newest first, then by time
        newest_first: np.ndarray[Any, Any] = every[np.argsort(-every["h"]["ts"].astype(np.int64),
                                                              kind="stable")]  # fmt: skip
        return newest_first


__all__ = ["CONNS_KEPT", "DiskRow", "IoFrame", "ProcIO", "Rates"]
