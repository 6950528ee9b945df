"""Hand-built tcp and disk records as the rings hold them (``struct trace_event`` rows
viewed as ``struct trace_tcp`` / ``struct trace_disk``), for the dashboard's
connections and disks panels (no kernel)."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from typing import Any

import numpy as np

from ringtool.event.layout import load_layout

LAYOUT = load_layout()
TCP = LAYOUT.type_id("tcp")
DISK = LAYOUT.type_id("disk")
Array = np.ndarray[Any, Any]


def v4(text: str) -> Array:
    """An IPv4 address as the record holds it (``::ffff:a.b.c.d``)."""
    return np.frombuffer(b"\0" * 10 + b"\xff\xff" + socket.inet_aton(text), np.uint8)


def tcp_batch(
    *,
    pid: Sequence[int],
    comm: Sequence[bytes],
    ts: Sequence[int],
    dur: Sequence[int],
    tx: Sequence[int],
    rx: Sequence[int],
    rport: Sequence[int] | None = None,
    remote: str = "10.1.2.3",
) -> Array:
    """One tcp record per connection (local 127.0.0.1:40000+i; the others as given)."""
    n = len(pid)
    arr = np.zeros(n, dtype=LAYOUT.event)
    rec = arr.view(LAYOUT.views[TCP])
    rec["h"]["type"] = TCP
    rec["h"]["pid"], rec["h"]["comm"], rec["h"]["ts"] = pid, comm, ts
    rec["duration_ns"], rec["tx_bytes"], rec["rx_bytes"] = dur, tx, rx
    rec["saddr"], rec["daddr"] = v4("127.0.0.1"), v4(remote)
    rec["sport"] = 40000 + np.arange(n)
    rec["dport"] = 80 if rport is None else rport
    rec["family"], rec["states"] = 4, 0b10000110
    rec["pad"] = 0x5A  # stale bytes of the ring: no field reads them
    return arr


def disk_batch(dev: Sequence[int], nbytes: Sequence[int], rwbs: Sequence[bytes]) -> Array:
    """One disk record per request."""
    arr = np.zeros(len(dev), dtype=LAYOUT.event)
    rec = arr.view(LAYOUT.views[DISK])
    rec["h"]["type"] = DISK
    rec["h"]["comm"] = b"dd"
    rec["dev"], rec["bytes"], rec["rwbs"] = dev, nbytes, rwbs
    rec["service_ns"] = 100_000
    rec["pad"] = 0x5A
    return arr
