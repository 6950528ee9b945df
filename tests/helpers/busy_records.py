"""Hand-built ``tcp`` and ``disk`` records (the layout's own structs) for the tests of
the fleet's busiest connections and disks, and what they add up to, in plain Python."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ringtool.event.layout import load_layout
from ringtool.event.records import Records

LAYOUT = load_layout()
TCP, DISK = LAYOUT.type_id("tcp"), LAYOUT.type_id("disk")
#: (local, lport, remote, rport, tx, rx, pid, comm)
Conn = tuple[str, int, str, int, int, int, int, bytes]
#: (major, minor, bytes, service_ns)
Io = tuple[int, int, int, int]


def _mapped(addr: str) -> bytes:
    ip = ipaddress.ip_address(addr)
    return (ipaddress.IPv6Address(f"::ffff:{ip}") if ip.version == 4 else ip).packed


def tcp_records(conns: Sequence[Conn], ts0: int = 10**12) -> np.ndarray[Any, Any]:
    arr = np.zeros(len(conns), LAYOUT.event)
    t = arr.view(LAYOUT.views[TCP])
    for i, (la, lp, ra, rp, tx, rx, pid, comm) in enumerate(conns):
        t["h"]["type"][i], t["h"]["ts"][i], t["h"]["pid"][i] = TCP, ts0 + i, pid
        t["h"]["comm"][i] = comm
        t["saddr"][i] = np.frombuffer(_mapped(la), np.uint8)
        t["daddr"][i] = np.frombuffer(_mapped(ra), np.uint8)
        t["sport"][i], t["dport"][i], t["tx_bytes"][i], t["rx_bytes"][i] = lp, rp, tx, rx
        t["family"][i], t["states"][i] = 4 if "." in la else 6, 0b10
    return arr


def disk_records(ios: Sequence[Io], ts0: int = 10**12) -> np.ndarray[Any, Any]:
    arr = np.zeros(len(ios), LAYOUT.event)
    d = arr.view(LAYOUT.views[DISK])
    for i, (major, minor, nbytes, service) in enumerate(ios):
        d["h"]["type"][i], d["h"]["ts"][i] = DISK, ts0 + i
        d["dev"][i], d["bytes"][i], d["service_ns"][i] = major << 20 | minor, nbytes, service
        d["rwbs"][i] = b"W"
    return arr


def records(arr: np.ndarray[Any, Any]) -> Records:
    return Records(arr)


def top_by_bytes(conns: Sequence[Conn], n: int) -> list[dict[str, Any]]:
    """The ``n`` busiest connections of ``conns`` (same key: summed), most first."""
    by: dict[tuple[str, int, str, int], list[int]] = {}
    for la, lp, ra, rp, tx, rx, _pid, _comm in conns:
        e = by.setdefault((la, lp, ra, rp), [0, 0, 0])
        e[0] += tx
        e[1] += rx
        e[2] += 1
    order = sorted(by.items(), key=lambda kv: (-(kv[1][0] + kv[1][1]), kv[0]))[:n]
    return [{"laddr": k[0], "lport": k[1], "raddr": k[2], "rport": k[3], "tx_bytes": v[0],
             "rx_bytes": v[1], "closes": v[2]} for k, v in order]  # fmt: skip


def true_p99(values: Sequence[int]) -> int:
    """The 99th percentile by rank: the smallest value at or above 99 % of them."""
    s = sorted(values)
    return s[max(0, math.ceil(0.99 * len(s)) - 1)]
