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
:func:`ringtool.trace.safe_text.printable`.

Which record column each field comes from is :mod:`ringtool.trace.fields` (the one
spec every output follows); a batch is decoded a column at a time
(:mod:`ringtool.trace.batch`), so it costs a few numpy operations per field plus one
dict per record.
"""

from __future__ import annotations

import ipaddress
import shlex
import time
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ringtool.trace import batch, open_flags
from ringtool.trace.batch import cstr
from ringtool.trace.fields import Field, fields_of
from ringtool.trace.layout import TraceLayout

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
        self.syscall_name = syscall_name or (lambda nr: f"sys_{nr}")
        if realtime_offset_ns is None:
            realtime_offset_ns = time.time_ns() - time.monotonic_ns()
        self.offset_ns = realtime_offset_ns
        #: net samples shorter than ``struct trace_net``: counted here, not decoded
        self.malformed = 0

    def wall(self, ts_ns: int) -> float:
        return (ts_ns + self.offset_ns) / 1e9

    def values(self, rec: np.ndarray[Any, Any], f: Field) -> list[Any]:
        """Field ``f`` (:mod:`ringtool.trace.fields`) of every record of ``rec``."""
        return batch.values(rec, f, self.offset_ns, self.syscall_name)

    def decode(self, arr: np.ndarray[Any, Any]) -> list[Event]:
        """Event dicts of a ``struct trace_event`` array, in array order."""
        out: list[Any] = [None] * len(arr)
        for g in batch.by_type(arr, self.types):
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


Columns = Mapping[str, list[Any]]


def _rest_exec(c: Columns) -> list[str]:
    """The arguments after argv[0] (execsnoop's ARGS; shell-quoted), `...` when cut,
    then ppid and uid, and for a failed attempt ``= -errno``. An event without
    argv/uid/ret (built by hand, or recorded before exec had them) shows what it has."""
    n = len(c["ppid"])
    argvs, cuts, uids, rets = (c.get(k, [None] * n)
                               for k in ("argv", "argv_truncated", "uid", "ret"))  # fmt: skip
    return [
        ("" if args is None else "".join(" " + shlex.quote(a) for a in args[1:]))
        + (" ..." if cut else "") + f" ppid={p}" + ("" if u is None else f" uid={u}")
        + (f" = {r}" if r else "")
        for args, cut, p, u, r in zip(argvs, cuts, c["ppid"], uids, rets, strict=True)
    ]  # fmt: skip


def _rest_open(c: Columns) -> list[str]:
    """`` O_FLAGS [mode] = ret (syscall)``: flags by name, the mode where the flags use
    it, the result, the syscall. An event without flags/syscall (built by hand) shows
    what it has."""
    n = len(c["ret"])
    flags, modes, calls = (c.get(k, [None] * n) for k in ("flags", "mode", "syscall"))
    names = open_flags.names_of(flags)
    return [
        name + open_flags.mode_text(f, m) + f" = {r}" + ("" if s is None else f" ({s})")
        for f, name, m, r, s in zip(flags, names, modes, c["ret"], calls, strict=True)
    ]  # fmt: skip


def _rest_exit(c: Columns) -> list[str]:
    return [f"code={'?' if x is None else x} ppid={p}"
            for x, p in zip(c["exit_code"], c["ppid"], strict=True)]  # fmt: skip


def _rest_fork(c: Columns) -> list[str]:
    return [f"child={p} ({n})" for p, n in zip(c["child_pid"], c["child_comm"], strict=True)]


def _rest_syscall(c: Columns) -> list[str]:
    return [f"{s} {lat / 1000:.1f} ms = {r}"
            for s, lat, r in zip(c["syscall"], c["latency_us"], c["ret"], strict=True)]  # fmt: skip


def _rest_net(c: Columns) -> list[str]:
    return [
        f"{d[:3]} {proto} {src}:{sport} > {dst}:{dport} len={n}"
        for d, proto, src, sport, dst, dport, n in zip(
            c["dir"], c["proto"], c["src"], c["sport"], c["dst"], c["dport"], c["len"],
            strict=True,
        )
    ]  # fmt: skip


#: Per type: the key of its file name (None: no file name), the rest of its detail,
#: built from columns of field values (one list per key) so that a batch formats a
#: whole column at once (:func:`detail_split` runs the same code for one event), and
#: the keys the rest reads (a batch where they are all constant builds it once).
DETAIL: dict[str, tuple[str | None, Callable[[Columns], list[str]], tuple[str, ...]]] = {
    "exec": ("filename", _rest_exec, ("argv", "argv_truncated", "ppid", "uid", "ret")),
    "open": ("path", _rest_open, ("flags", "mode", "ret", "syscall")),
    "exit": (None, _rest_exit, ("exit_code", "ppid")),
    "fork": (None, _rest_fork, ("child_pid", "child_comm")),
    "syscall": (None, _rest_syscall, ("syscall", "latency_us", "ret")),
    "net": (None, _rest_net, ("dir", "proto", "src", "sport", "dst", "dport", "len")),
}


def detail_split(ev: Event) -> tuple[str, str]:
    """The event's type-specific part as ``(path, rest)``: the file name of an exec or
    open (``""`` for other types) and what follows it; :func:`detail` is the two
    joined. A column output that must cut keeps the end of ``path`` and all of
    ``rest``, and cuts other details at their end (their start says the most)."""
    spec = DETAIL.get(ev["type"])
    if spec is None:
        return "", ""
    path_key, rest, _ = spec
    return (ev[path_key] if path_key else ""), rest({k: [v] for k, v in ev.items()})[0]


def detail(ev: Event) -> str:
    """A one-line human description of the event's type-specific part."""
    return "".join(detail_split(ev))


__all__ = ["DETAIL", "PROTOS", "Decoder", "Event", "addr", "cstr", "detail", "detail_split"]
