"""A host's busiest TCP connections and disks, from the events ``collect`` reads.

:class:`Busiest` is fed each ``tcp`` and ``disk`` message of one host: ``rows/1``
records as numpy arrays (grouped with ``np.unique`` and summed with ``np.bincount``:
no Python per event, only per distinct connection or device of a batch), ``jsonl/1``
lines by their fields (``laddr``, ``lport``, ``raddr``, ``rport``, ``tx_bytes``,
``rx_bytes``; ``dev``, ``disk``, ``bytes``, ``service_us``).

* Connections: a ``tcp`` event is one connection at its close, with the bytes it
  carried over its life (``tx_bytes``: sent and acknowledged, ``rx_bytes``: received).
  Per (local address, port, remote address, port): bytes, closes and the owner's
  pid and comm of the last; the top :data:`TOP` by ``tx + rx`` are shown. At most
  :data:`MAX_CONNS` are kept: past that the least busy half is dropped and counted
  (``conns_dropped``), so a top entry's bytes are exact from when it was last kept.
* Disks: per device (``dev``: major:minor, and its name where the host had one),
  the requests and bytes of the last interval as per second (``iops``,
  ``bytes_per_s``) and in all, and the 99th percentile of the device's service time
  (issue to completion) of the last interval and of all (``p99_us``,
  ``p99_us_all``), from a histogram of :data:`SUB` buckets per power of two (an upper
  bound within 1/:data:`SUB` of the value: 12.5 %). At most :data:`MAX_DISKS` devices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ringtool.errors import BadMessageError
from ringtool.event.disk_data import dev_text
from ringtool.event.layout import TraceLayout
from ringtool.event.records import Records
from ringtool.event.tcp_data import address
from ringtool.export.reading import BAD_BODY, json_object

#: Connections shown per host; kept at most; devices kept at most.
TOP = 5
MAX_CONNS = 4096
MAX_DISKS = 256
#: Histogram buckets per power of two, and in all (64 powers).
SUB = 8
BUCKETS = 64 * SUB

Array = np.ndarray[Any, Any]
_U64 = np.dtype("<u8")
#: A connection's key as one structured value: local and remote address (two u64
#: each, their bytes as stored), the ports' four bytes.
_KEY = np.dtype([("l0", _U64), ("l1", _U64), ("r0", _U64), ("r1", _U64), ("ports", "<u4")])
ConnKey = tuple[str, int, str, int]


def buckets(ns: Array) -> Array:
    """The histogram bucket of each latency (ns; values below 1 as 1): ``SUB *
    floor(log2 v)`` plus the next ``log2(SUB)`` bits of ``v``."""
    mant, exp = np.frexp(np.maximum(ns, 1).astype(np.float64))  # v = mant * 2**exp
    sub = ((mant * 2 - 1) * SUB).astype(np.int64)
    return np.clip((exp.astype(np.int64) - 1) * SUB + np.minimum(sub, SUB - 1), 0, BUCKETS - 1)


def quantile_ns(hist: Array, q: float) -> float:
    """The upper bound (ns) of the bucket holding quantile ``q`` of ``hist``; 0 when
    it is empty."""
    total = int(hist.sum())
    if not total:
        return 0.0
    b = int(np.searchsorted(np.cumsum(hist), q * total, side="left"))
    exp, sub = divmod(b, SUB)
    return float(2.0**exp * (1 + (sub + 1) / SUB))


@dataclass
class Conn:
    tx: int = 0
    rx: int = 0
    closes: int = 0
    pid: int = 0
    comm: str = ""


@dataclass
class Disk:
    name: str = ""
    requests: int = 0
    bytes: int = 0
    hist: Array = field(default_factory=lambda: np.zeros(BUCKETS, np.int64))
    now_requests: int = 0
    now_bytes: int = 0
    now_hist: Array = field(default_factory=lambda: np.zeros(BUCKETS, np.int64))
    iops: float = 0.0
    bytes_per_s: float = 0.0
    p99_ns: float = 0.0

    def add(self, requests: int, nbytes: int, hist: Array) -> None:
        self.requests += requests
        self.bytes += nbytes
        self.hist += hist
        self.now_requests += requests
        self.now_bytes += nbytes
        self.now_hist += hist


class Busiest:
    """One host's connections and disks (see the module doc)."""

    def __init__(self) -> None:
        self.conns: dict[ConnKey, Conn] = {}
        self.conns_dropped = 0
        self.disks: dict[str, Disk] = {}
        self.disks_refused = 0
        self._addr_text: dict[tuple[int, int], str] = {}

    # -- feeding ---------------------------------------------------------------------
    def add_records(self, records: Records, layout: TraceLayout) -> None:
        """The ``tcp`` and ``disk`` records among ``records.events``."""
        ev = records.events
        if not len(ev):
            return
        types = ev["h"]["type"]
        if "tcp" in layout.names:
            tcp = ev[types == layout.type_id("tcp")]
            if len(tcp):
                self._tcp_rows(tcp.view(layout.views[layout.type_id("tcp")]))
        if "disk" in layout.names:
            disk = ev[types == layout.type_id("disk")]
            if len(disk):
                self._disk_rows(disk.view(layout.views[layout.type_id("disk")]))

    def _tcp_rows(self, t: Array) -> None:
        """Grouped by connection: one structured key per row (addresses and ports as
        four u64 and one u32: one sort), sums by ``np.bincount``; Python runs once per
        distinct connection, and addresses are made text once per distinct address."""
        keys = np.empty((len(t), 36), np.uint8)
        keys[:, :16], keys[:, 16:32] = t["saddr"], t["daddr"]
        keys[:, 32:34] = t["sport"].astype("<u2").view(np.uint8).reshape(-1, 2)
        keys[:, 34:36] = t["dport"].astype("<u2").view(np.uint8).reshape(-1, 2)
        uniq, first, inv = np.unique(keys.view(_KEY).reshape(-1), return_index=True,
                                     return_inverse=True)  # fmt: skip
        inv = inv.reshape(-1)
        tx = np.bincount(inv, t["tx_bytes"].astype(np.float64)).tolist()
        rx = np.bincount(inv, t["rx_bytes"].astype(np.float64)).tolist()
        closes = np.bincount(inv).tolist()
        last = np.zeros(len(uniq), np.int64)
        np.maximum.at(last, inv, np.arange(len(t)))
        lo = [
            self._text(a, b) for a, b in zip(uniq["l0"].tolist(), uniq["l1"].tolist(), strict=True)
        ]
        re = [
            self._text(a, b) for a, b in zip(uniq["r0"].tolist(), uniq["r1"].tolist(), strict=True)
        ]
        sport, dport = t["sport"][first].tolist(), t["dport"][first].tolist()
        pids = t["h"]["pid"][last].tolist()
        comms = t["h"]["comm"][last].astype("S16").tolist()
        for i in range(len(uniq)):
            comm = comms[i].decode("utf-8", "backslashreplace")
            self._conn((lo[i], sport[i], re[i], dport[i]), int(tx[i]), int(rx[i]), closes[i],
                       pids[i], comm)  # fmt: skip

    def _text(self, hi: int, lo: int) -> str:
        """An address (two u64 of its 16 bytes, as stored) as text, cached."""
        text = self._addr_text.get((hi, lo))
        if text is None:
            if len(self._addr_text) >= MAX_CONNS:
                self._addr_text.clear()
            raw = np.array([hi, lo], _U64).tobytes()
            text = self._addr_text[(hi, lo)] = address(raw)
        return text

    def _disk_rows(self, d: Array) -> None:
        devs, inv = np.unique(d["dev"], return_inverse=True)
        inv = inv.reshape(-1)
        counts = np.bincount(inv, minlength=len(devs))
        nbytes = np.bincount(inv, d["bytes"].astype(np.float64), minlength=len(devs))
        hist = np.bincount(inv * BUCKETS + buckets(d["service_ns"]),
                           minlength=len(devs) * BUCKETS).reshape(len(devs), BUCKETS)  # fmt: skip
        for i, dev in enumerate(devs.tolist()):
            self._disk(dev_text(dev), "", int(counts[i]), int(nbytes[i]), hist[i])

    def add_lines(self, kind: str, lines: list[str]) -> None:
        """``jsonl/1`` event lines of ``kind`` (``tcp`` or ``disk``); BadMessageError
        when a field is not of its kind."""
        objs = [json_object(line) for line in lines]
        try:
            if kind == "tcp":
                for o in objs:
                    key = (str(o["laddr"]), _int(o["lport"]), str(o["raddr"]), _int(o["rport"]))
                    self._conn(key, _int(o["tx_bytes"]), _int(o["rx_bytes"]), 1,
                               _int(o.get("pid", 0)), str(o.get("comm", "")))  # fmt: skip
            elif kind == "disk":
                by: dict[tuple[str, str], list[Any]] = {}
                for o in objs:
                    entry = by.setdefault((str(o["dev"]), str(o.get("disk", ""))), [0, 0, []])
                    entry[0] += 1
                    entry[1] += _int(o["bytes"])
                    entry[2].append(float(o["service_us"]) * 1000)
                for (dev, name), (n, nbytes, lat) in by.items():
                    hist = np.bincount(buckets(np.array(lat)), minlength=BUCKETS)
                    self._disk(dev, name, n, nbytes, hist)
        except (KeyError, TypeError, ValueError) as exc:
            raise BadMessageError(BAD_BODY, f"a {kind} line lacks a field or has a wrong "
                                  f"one: {str(exc)[:80]}") from None  # fmt: skip

    def _conn(self, key: ConnKey, tx: int, rx: int, closes: int, pid: int, comm: str) -> None:
        c = self.conns.get(key)
        if c is None:
            if len(self.conns) >= MAX_CONNS:
                keep = sorted(self.conns.items(), key=lambda kv: -(kv[1].tx + kv[1].rx))
                self.conns = dict(keep[: MAX_CONNS // 2])
                self.conns_dropped += len(keep) - len(self.conns)
            c = self.conns[key] = Conn()
        c.tx += tx
        c.rx += rx
        c.closes += closes
        c.pid, c.comm = pid, comm

    def _disk(self, dev: str, name: str, n: int, nbytes: int, hist: Array) -> None:
        d = self.disks.get(dev)
        if d is None:
            if len(self.disks) >= MAX_DISKS:
                self.disks_refused += n
                return
            d = self.disks[dev] = Disk()
        d.name = name or d.name
        d.add(n, nbytes, hist)

    # -- reading ---------------------------------------------------------------------
    def tick(self, dt: float) -> None:
        """Close an interval of ``dt`` s: the disks' rates and p99 of it."""
        for d in self.disks.values():
            d.iops = d.now_requests / dt
            d.bytes_per_s = d.now_bytes / dt
            d.p99_ns = quantile_ns(d.now_hist, 0.99)
            d.now_requests = d.now_bytes = 0
            d.now_hist[:] = 0

    def top(self, n: int = TOP) -> list[tuple[ConnKey, Conn]]:
        """The ``n`` connections with the most bytes (``tx + rx``), most first."""
        return sorted(self.conns.items(), key=lambda kv: (-(kv[1].tx + kv[1].rx), kv[0]))[:n]

    def record(self) -> dict[str, Any]:
        """``connections`` (the top) and ``disks`` (by device), as ``--json`` writes them."""
        conns = [{"laddr": k[0], "lport": k[1], "raddr": k[2], "rport": k[3], "tx_bytes": c.tx,
                  "rx_bytes": c.rx, "bytes": c.tx + c.rx, "closes": c.closes, "pid": c.pid,
                  "comm": c.comm} for k, c in self.top()]  # fmt: skip
        disks = [{"dev": dev, "disk": d.name, "iops": round(d.iops, 1),
                  "bytes_per_s": round(d.bytes_per_s, 1), "p99_us": round(d.p99_ns / 1000, 1),
                  "requests": d.requests, "bytes": d.bytes,
                  "p99_us_all": round(quantile_ns(d.hist, 0.99) / 1000, 1)}
                 for dev, d in sorted(self.disks.items())]  # fmt: skip
        return {"connections": conns, "disks": disks, "conns_dropped": self.conns_dropped}


def _int(v: Any) -> int:
    if type(v) is not int:
        raise TypeError(f"{str(v)[:40]!r} is not an integer")
    return v


__all__ = ["BUCKETS", "MAX_CONNS", "MAX_DISKS", "SUB", "TOP", "Busiest", "buckets", "quantile_ns"]
