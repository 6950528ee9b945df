"""Hand-built tcp and disk records (``struct trace_tcp``/``struct trace_disk`` viewed
as ``struct trace_event`` records, as a batch holds them) for the per-process traffic
tests."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ringtool.event.layout import load_layout

LAYOUT = load_layout()
TCP, DISK = LAYOUT.type_id("tcp"), LAYOUT.type_id("disk")


def _mapped(text: str) -> np.ndarray[Any, Any]:
    """A 16-byte address as the records hold it (IPv4 as ``::ffff:a.b.c.d``)."""
    ip = ipaddress.ip_address(text)
    v6 = ipaddress.IPv6Address(f"::ffff:{ip}") if ip.version == 4 else ip
    return np.frombuffer(v6.packed, np.uint8)


def _records(type_id: int, rows: Sequence[Mapping[str, Any]]) -> np.ndarray[Any, Any]:
    view = LAYOUT.views[type_id]
    rec = np.zeros(len(rows), view)
    rec["h"]["type"] = type_id
    for i, row in enumerate(rows):
        for key, value in row.items():
            if key in ("ts", "pid", "tid", "comm"):
                rec["h"][key][i] = value
            elif key in ("saddr", "daddr"):
                rec[key][i] = _mapped(value)
            else:
                rec[key][i] = value
    out: np.ndarray[Any, Any] = rec.view(LAYOUT.event)
    return out


def tcp_records(rows: Sequence[Mapping[str, Any]]) -> np.ndarray[Any, Any]:
    """tcp records with the given fields (header ones: ``ts``, ``pid``, ``tid``,
    ``comm``; addresses as text; any other ``struct trace_tcp`` member by name)."""
    return _records(TCP, rows)


def disk_records(rows: Sequence[Mapping[str, Any]]) -> np.ndarray[Any, Any]:
    """disk records likewise (``rwbs`` as bytes, ``dev`` the kernel's dev_t)."""
    return _records(DISK, rows)
