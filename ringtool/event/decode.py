"""Decode trace records (numpy arrays of the header's dtypes) into event dicts.

An event dict always has ``type`` (``exec``/``exit``/``fork``/``open``/``syscall``/
``net``), ``ts`` (CLOCK_REALTIME seconds, float), ``cpu``, ``pid``, ``tid``, ``comm``,

``cgroup``, ``uid``, ``gid`` (every type but net); then per type:

* exec (every attempt, failed ones too): ``filename``, ``argv``, ``argv_truncated``,
  ``ppid``, ``ret`` (0 or -errno), ``syscall`` (``execve``/``execveat``)
* exit: ``exit_code`` (None when the process ended without exit(2)/exit_group(2), e.g.
  by a fatal signal), ``ppid``
* fork: ``child_pid``, ``child_comm``, ``ppid``
* open: ``path``, ``flags``, ``mode``, ``ret`` (fd or -errno), ``syscall`` (``open``,
  ``openat``, ``openat2``, ``creat`` or ``open_by_handle_at``)
* syscall (slower than the threshold): ``syscall``, ``nr``, ``latency_us``, ``ret``
* net: ``src``, ``dst``, ``sport``, ``dport``, ``proto``, ``len``, ``ifindex``, ``dir``,
  ``captured`` (and, dropped from JSON output: the packet bytes in ``payload``, the
  whole sample in ``raw``, the timestamp in ns in ``ts_ns``)

Strings (``comm``, paths, names) are the process's bytes: UTF-8 where they are, and
``\\xNN`` (four characters) for each byte that is not (see :func:`cstr`). They may hold
control characters and escape sequences: show them on a terminal only through
:func:`ringtool.event.safe_text.printable`.

Which record column each field comes from is :mod:`ringtool.event.fields` (the one
spec every output follows); a batch is decoded a column at a time
(:mod:`ringtool.event.columns`), so it costs a few numpy operations per field plus one
dict per record.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ringtool.event import columns as batch
from ringtool.event.columns import cstr
from ringtool.event.fields import Field, fields_of
from ringtool.event.layout import TraceLayout

Event = dict[str, Any]
PROTOS = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmp6"}


class Decoder:
    """Turns record batches into event dicts.

    ``syscall_name(nr)`` names syscalls (default ``"sys_<nr>"``). Kernel timestamps
    (CLOCK_MONOTONIC ns) become wall-clock seconds with an offset taken at creation.
    """

    def __init__(
        self,
        layout: TraceLayout,
        syscall_name: Callable[[int], str] | None = None,
        *,
        realtime_offset_ns: int | None = None,
    ) -> None:
        self.layout = layout
        self.types = layout.type_names
        #: type value -> the struct its records are viewed as (tcp: struct trace_tcp)
        self.views = layout.views
        self.syscall_name = syscall_name or (lambda nr: f"sys_{nr}")
        if realtime_offset_ns is None:
            realtime_offset_ns = time.time_ns() - time.monotonic_ns()
        self.offset_ns = realtime_offset_ns
        #: net samples shorter than ``struct trace_net``: counted here, not decoded
        self.malformed = 0

    def wall(self, ts_ns: int) -> float:
        return (ts_ns + self.offset_ns) / 1e9

    def values(self, rec: np.ndarray[Any, Any], f: Field) -> list[Any]:
        """Field ``f`` (:mod:`ringtool.event.fields`) of every record of ``rec``."""
        return batch.values(rec, f, self.offset_ns, self.syscall_name)

    def decode(self, arr: np.ndarray[Any, Any]) -> list[Event]:
        """Event dicts of a ``struct trace_event`` array, in array order."""
        out: list[Any] = [None] * len(arr)
        for g in batch.by_type(arr, self.types, self.views):
            fields = fields_of(g.name)
            keys = ("type", *(f.key for f in fields))
            cols = [[g.name] * len(g.rec), *(self.values(g.rec, f) for f in fields)]
            events = [dict(zip(keys, row, strict=True)) for row in zip(*cols, strict=True)]
            if g.positions is None:
                return events
            for i, ev in zip(g.positions.tolist(), events, strict=True):
                out[i] = ev
        return out

    def decode_net(self, samples: list[tuple[int, bytes]]) -> list[Event]:
        """Event dicts of raw net samples (``struct trace_net`` + packet bytes); a sample
        too short to hold its header is counted in :attr:`malformed` instead."""
        dt = self.layout.net
        out: list[Event] = []
        for _cpu, raw in samples:
            if len(raw) < dt.itemsize:
                self.malformed += 1
                continue
            rec = np.frombuffer(raw, dtype=dt, count=1)[0]
            h = rec["h"]
            fam = int(rec["family"])
            captured = int(rec["captured"])
            ev: Event = {
                "type": "net", "ts": self.wall(int(h["ts"])), "cpu": int(h["cpu"]),
                "pid": int(h["pid"]), "tid": int(h["tid"]), "comm": cstr(bytes(h["comm"])),
                "cgroup": int(h["cgroup"]),
                "src": addr(fam, bytes(rec["saddr"])), "dst": addr(fam, bytes(rec["daddr"])),
                "sport": int(rec["sport"]), "dport": int(rec["dport"]),
                "proto": PROTOS.get(int(rec["proto"]), str(int(rec["proto"]))),
                "len": int(rec["len"]), "ifindex": int(rec["ifindex"]),
                "dir": "egress" if int(rec["dir"]) else "ingress", "captured": captured,
                "ts_ns": int(h["ts"]) + self.offset_ns,
                "payload": raw[dt.itemsize : dt.itemsize + captured],
                "raw": raw[: dt.itemsize + captured],
            }  # fmt: skip
            out.append(ev)
        return out


def addr(family: int, raw: bytes) -> str:
    """Text form of an address of ``family`` 4 or 6 ('' for anything else)."""
    if family == 4:
        return str(ipaddress.IPv4Address(raw[:4]))
    if family == 6:
        return str(ipaddress.IPv6Address(raw[:16]))
    return ""


__all__ = ["PROTOS", "Decoder", "Event", "addr", "cstr"]
