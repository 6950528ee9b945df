"""ringtool's KMES event types and their payload decoders.

The bridge's BPF programs (``bpf/kmes_bridge.c``) emit records that start with an
8-byte prefix ``u32 cpu, u32 event_type``; the bridge strips it and writes the rest as
the KMES payload. Event type 0 is never used (docs/kmes.md §4.1); the types and
payloads are listed in docs/kmes.md §12.1.

The decoded fields are named as ``ringtool trace`` names them (docs/schema.md): the
payload's ``tgid`` (the process) is ``pid``, its ``pid`` (the kernel's id of the
thread) is ``tid``, and sched_process_exec's ``old_pid`` (the thread's id before the
exec) is ``old_tid``; an exit's ``prio`` is the kernel's priority of the task (120:
nice 0), a field the trace's events do not have.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

BRIDGE_PREFIX = struct.Struct("<II")  # cpu, event_type (see bpf/kmes_bridge.c)

EVENT_EXEC = 1  # sched_process_exec
EVENT_EXIT = 2  # sched_process_exit
EVENT_LOST = 3  # written by the bridge itself (origin_class 3): events a source lost
EVENT_BENCH = 4  # `ringtool bench kmes` load (bpf/kmes_bridge.c kmes_bench_emit)

_EXEC = struct.Struct("<IIII16s128s")  # pid, tgid, old_pid, uid, comm, filename
_EXIT = struct.Struct("<IIiI16s")  # pid, tgid, prio, uid, comm
_LOST = struct.Struct("<IIQ")  # source origin_class, reserved, count
_BENCH = struct.Struct("<QQ")  # seq, ktime (bpf_ktime_get_ns), then 48 filler bytes


def _cstr(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace")


def _exec(p: bytes) -> dict[str, Any]:
    tid, pid, old_tid, uid, comm, filename = _EXEC.unpack_from(p)
    return {
        "pid": pid,
        "tid": tid,
        "old_tid": old_tid,
        "uid": uid,
        "comm": _cstr(comm),
        "filename": _cstr(filename),
    }


def _exit(p: bytes) -> dict[str, Any]:
    tid, pid, prio, uid, comm = _EXIT.unpack_from(p)
    return {"pid": pid, "tid": tid, "prio": prio, "uid": uid, "comm": _cstr(comm)}


def _lost(p: bytes) -> dict[str, Any]:
    source, _res, count = _LOST.unpack_from(p)
    return {"source": {1: "ringbuf", 2: "perf"}.get(source, str(source)), "count": count}


def _bench(p: bytes) -> dict[str, Any]:
    seq, ktime = _BENCH.unpack_from(p)
    return {"seq": seq, "ktime": ktime}


DECODERS: dict[int, tuple[str, int, Callable[[bytes], dict[str, Any]]]] = {
    EVENT_EXEC: ("exec", _EXEC.size, _exec),
    EVENT_EXIT: ("exit", _EXIT.size, _exit),
    EVENT_LOST: ("lost", _LOST.size, _lost),
    EVENT_BENCH: ("bench", _BENCH.size, _bench),
}


def decode(event_type: int, payload: bytes) -> tuple[str, dict[str, Any] | None]:
    """``(name, fields)``; fields is None for unknown types or short payloads."""
    entry = DECODERS.get(event_type)
    if entry is None:
        return f"type{event_type}", None
    name, size, fn = entry
    if len(payload) < size:
        return name, None
    return name, fn(payload)
