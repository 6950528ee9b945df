"""The one-line text of an event's type-specific part, shared by the column output,
the CSV/fields tables and the dashboard: built a column at a time for a batch
(:data:`DETAIL`), or for one event (:func:`detail_split`, :func:`detail`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from typing import Any

from ringtool.event import open_flags, safe_text, tcp_data
from ringtool.event.decode import Event
from ringtool.event.registry import BY_NAME, EVENT_TYPES
from ringtool.event.value_text import result_text

Columns = Mapping[str, list[Any]]


def _rest_exec(c: Columns) -> list[str]:
    """The arguments after argv[0] (execsnoop's ARGS; shell-quoted), `...` when cut,
    then ppid and uid, and for a failed attempt ``= -errno NAME``. An event without
    argv/uid/ret (built by hand, or recorded before exec had them) shows what it has."""
    n = len(c["ppid"])
    argvs, cuts, uids, rets = (c.get(k, [None] * n)
                               for k in ("argv", "argv_truncated", "uid", "ret"))  # fmt: skip
    return [
        ("" if args is None else "".join(" " + shlex.quote(a) for a in args[1:]))
        + (" ..." if cut else "") + f" ppid={p}" + ("" if u is None else f" uid={u}")
        + (f" = {result_text(r)}" if r else "")
        for args, cut, p, u, r in zip(argvs, cuts, c["ppid"], uids, rets, strict=True)
    ]  # fmt: skip


def _rest_open(c: Columns) -> list[str]:
    """`` O_FLAGS [mode] = ret (syscall)``: flags by name, the mode where the flags use
    it, the result (an error with its name: ``-2 ENOENT``), the syscall. An event
    without flags/syscall (built by hand) shows what it has."""
    n = len(c["ret"])
    flags, modes, calls = (c.get(k, [None] * n) for k in ("flags", "mode", "syscall"))
    names = open_flags.names_of(flags)
    return [
        name + open_flags.mode_text(f, m) + f" = {result_text(r)}"
        + ("" if s is None else f" ({s})")
        for f, name, m, r, s in zip(flags, names, modes, c["ret"], calls, strict=True)
    ]  # fmt: skip


def _rest_exit(c: Columns) -> list[str]:
    return [f"code={'?' if x is None else x} ppid={p}"
            for x, p in zip(c["exit_code"], c["ppid"], strict=True)]  # fmt: skip


def _rest_fork(c: Columns) -> list[str]:
    return [f"child={p} ({n})" for p, n in zip(c["child_pid"], c["child_comm"], strict=True)]


def _rest_syscall(c: Columns) -> list[str]:
    return [f"{s} {lat / 1000:.1f} ms = {result_text(r)}"
            for s, lat, r in zip(c["syscall"], c["latency_us"], c["ret"], strict=True)]  # fmt: skip


def _rest_mark(c: Columns) -> list[str]:
    return list(c["text"])


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _rest_tcp(c: Columns) -> list[str]:
    """``active 10.0.0.1:40000 > 10.0.0.2:80 tx=B rx=B 1.2 ms``: who opened it, local >
    remote, the bytes, how long it lived; a failed one says so and why. Reads the keys
    of the registry's entry (its ``detail.reads``), in their order."""
    return [
        f"{'active' if act else 'passive'} {_endpoint(la, lp)} > {_endpoint(ra, rp)}"
        + (f" failed {tcp_data.errno_name(err) if err else ''}".rstrip() if bad
           else f" tx={tx} rx={rx}")
        + f" {us / 1000:.1f} ms"
        for act, la, lp, ra, rp, tx, rx, us, bad, err
        in zip(*(c[k] for k in BY_NAME["tcp"].detail.reads), strict=True)
    ]  # fmt: skip


def _rest_disk(c: Columns) -> list[str]:
    """``loop0 (7:0) write WS 4096 B @8 0.1 ms q=0.0 ms``: the device (its name where
    /sys knows it), the operation and its letters, the bytes and first sector, the
    service time and the queue time; a failed one ``= -errno``. Reads the keys of the
    registry's entry (its ``detail.reads``), in their order."""
    return [
        (f"{safe_text.printable(name)} ({dev})" if name else dev)
        + f" {op} {safe_text.printable(rwbs)} {n} B @{sector} {us / 1000:.3f} ms"
        + f" q={q / 1000:.3f} ms" + (f" = {err}" if err else "")
        for name, dev, op, rwbs, n, sector, us, q, err
        in zip(*(c[k] for k in BY_NAME["disk"].detail.reads), strict=True)
    ]  # fmt: skip


def _rest_cpuwait(c: Columns) -> list[str]:
    """``waited 120.5 ms for a CPU``, `` (preempted blocking)`` when it began so."""
    return [f"waited {us / 1000:.1f} ms for a CPU" + (" (preempted blocking)" if b else "")
            for us, b in zip(c["wait_us"], c["blocking"], strict=True)]  # fmt: skip


def _rest_net(c: Columns) -> list[str]:
    return [
        f"{d} {proto} {src}:{sport} > {dst}:{dport} len={n}"
        for d, proto, src, sport, dst, dport, n in zip(
            c["dir"], c["proto"], c["src"], c["sport"], c["dst"], c["dport"], c["len"],
            strict=True,
        )
    ]  # fmt: skip


#: Per type, the code of the rest of its detail (the registry's
#: :class:`~ringtool.event.registry.Detail` says what it reads).
_REST: dict[str, Callable[[Columns], list[str]]] = {
    "exec": _rest_exec, "open": _rest_open, "exit": _rest_exit, "fork": _rest_fork,
    "syscall": _rest_syscall, "mark": _rest_mark, "net": _rest_net, "tcp": _rest_tcp,
    "disk": _rest_disk,
    "cpuwait": _rest_cpuwait,
}  # fmt: skip

#: Per type: the key of its file name (None: no file name), the rest of its detail,
#: built from columns of field values (one list per key) so that a batch formats a
#: whole column at once (:func:`detail_split` runs the same code for one event), and
#: the keys the rest reads (a batch where they are all constant builds it once):
#: each type's :attr:`~ringtool.event.registry.EventType.detail` with its code.
DETAIL: dict[str, tuple[str | None, Callable[[Columns], list[str]], tuple[str, ...]]] = {
    t.name: (t.detail.path, _REST[t.name], t.detail.reads) for t in EVENT_TYPES
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


__all__ = ["DETAIL", "Columns", "detail", "detail_split"]
