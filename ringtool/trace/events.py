"""Decode trace records (numpy arrays of the header's dtypes) into event dicts.

An event dict always has ``type`` (``exec``/``exit``/``fork``/``open``/``syscall``/
``net``), ``ts`` (CLOCK_REALTIME seconds, float), ``cpu``, ``pid``, ``tid``, ``comm``;
then per type:

* exec: ``filename``, ``ppid``
* exit: ``exit_code`` (None when the process ended without exit(2)/exit_group(2), e.g.
  by a fatal signal), ``ppid``
* fork: ``child_pid``, ``child_comm``, ``ppid``
* open: ``path``, ``flags``, ``ret`` (fd or -errno)
* syscall (slower than the threshold): ``syscall``, ``nr``, ``latency_us``, ``ret``
* net: ``src``, ``dst``, ``sport``, ``dport``, ``proto``, ``len``, ``ifindex``, ``dir``,
  ``captured`` (and, dropped from JSON output: the packet bytes in ``payload``, the
  whole sample in ``raw``, the timestamp in ns in ``ts_ns``)

Strings (``comm``, paths, names) are the process's bytes: UTF-8 where they are, and
``\\xNN`` (four characters) for each byte that is not (see :func:`cstr`). They may hold
control characters and escape sequences: show them on a terminal only through
:func:`ringtool.trace.safe_text.printable`.

Columns are pulled out of a batch once (``tolist()``), so a batch costs one numpy
conversion per field plus one dict per record.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ringtool.trace.layout import TraceLayout

Event = dict[str, Any]
#: What :meth:`Decoder.rows` yields: type, ts, cpu, pid, tid, comm, type-specific fields.
Row = tuple[str, float, int, int, int, str, list[tuple[str, Any]]]
PROTOS = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmp6"}


def cstr(raw: bytes) -> str:
    """A C string field: up to the first NUL (the kernel leaves stale bytes after it
    in a reserved, unzeroed record), decoded as UTF-8 with every byte that is not
    UTF-8 written as ``\\xNN`` (``backslashreplace``): nothing is lost, and the text
    is always valid Unicode (JSON-safe, no surrogates)."""
    return raw.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")


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
        self.syscall_name = syscall_name or (lambda nr: f"sys_{nr}")
        if realtime_offset_ns is None:
            realtime_offset_ns = time.time_ns() - time.monotonic_ns()
        self.offset_ns = realtime_offset_ns
        #: net samples shorter than ``struct trace_net``: counted here, not decoded
        self.malformed = 0

    def wall(self, ts_ns: int) -> float:
        return (ts_ns + self.offset_ns) / 1e9

    def rows(self, arr: np.ndarray[Any, Any]) -> Iterator[Row]:
        """Per record: ``(type name, ts, cpu, pid, tid, comm, fields)`` where ``fields``
        are the type-specific ``(key, value)`` pairs (see :meth:`fields`)."""
        if len(arr) == 0:
            return
        h = arr["h"]
        ts = ((h["ts"].astype(np.int64) + self.offset_ns) / 1e9).tolist()
        cols = zip(
            h["type"].tolist(), ts, h["cpu"].tolist(), h["pid"].tolist(), h["tid"].tolist(),
            h["comm"].tolist(), arr["value"].tolist(), arr["ppid"].tolist(),
            arr["ret"].tolist(), arr["aux"].tolist(), arr["data"].tolist(), strict=True,
        )  # fmt: skip
        types = self.types
        fields = self.fields
        for typ, t, cpu, pid, tid, comm, value, ppid, ret, aux, data in cols:
            name = types.get(typ, str(typ))
            yield name, t, cpu, pid, tid, cstr(comm), fields(name, value, ppid, ret, aux, data)

    def fields(
        self, name: str, value: int, ppid: int, ret: int, aux: int, data: bytes
    ) -> list[tuple[str, Any]]:
        """The type-specific part of an event, in output order (the one place that
        says which record field means what for each type)."""
        if name == "open":
            return [("path", cstr(data)), ("flags", value), ("ret", ret)]
        if name == "exec":
            return [("filename", cstr(data)), ("ppid", ppid)]
        if name == "exit":
            return [("exit_code", (value >> 8) & 0xFF if aux else None), ("ppid", ppid)]
        if name == "fork":
            return [("child_pid", aux), ("child_comm", cstr(data)), ("ppid", ppid)]
        if name == "syscall":
            return [("syscall", self.syscall_name(aux)), ("nr", aux),
                    ("latency_us", round(value / 1000, 1)), ("ret", ret)]  # fmt: skip
        return []

    def decode(self, arr: np.ndarray[Any, Any]) -> list[Event]:
        """Event dicts of a ``struct trace_event`` array, in array order."""
        out: list[Event] = []
        for name, t, cpu, pid, tid, comm, fields in self.rows(arr):
            ev: Event = {"type": name, "ts": t, "cpu": cpu, "pid": pid, "tid": tid,
                         "comm": comm}  # fmt: skip
            ev.update(fields)
            out.append(ev)
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


def detail_split(ev: Event) -> tuple[str, str]:
    """The event's type-specific part as ``(path, rest)``: the file name of an exec or
    open (``""`` for other types) and what follows it; :func:`detail` is the two
    joined. A column output that must cut keeps the end of ``path`` and all of
    ``rest``, and cuts other details at their end (their start says the most)."""
    t = ev["type"]
    if t == "exec":
        return ev["filename"], f" ppid={ev['ppid']}"
    if t == "open":
        return ev["path"], f" = {ev['ret']}"
    if t == "exit":
        code = "?" if ev["exit_code"] is None else ev["exit_code"]
        return "", f"code={code} ppid={ev['ppid']}"
    if t == "fork":
        return "", f"child={ev['child_pid']} ({ev['child_comm']})"
    if t == "syscall":
        return "", f"{ev['syscall']} {ev['latency_us'] / 1000:.1f} ms = {ev['ret']}"
    if t == "net":
        return "", (
            f"{ev['dir'][:3]} {ev['proto']} {ev['src']}:{ev['sport']} > "
            f"{ev['dst']}:{ev['dport']} len={ev['len']}"
        )
    return "", ""


def detail(ev: Event) -> str:
    """A one-line human description of the event's type-specific part."""
    return "".join(detail_split(ev))


__all__ = ["PROTOS", "Decoder", "Event", "addr", "cstr", "detail", "detail_split"]
