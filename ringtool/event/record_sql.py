"""A recording as SQL tables (DuckDB): what ``ringtool query`` names (docs/record.md).

:func:`with_text` adds the text of the ``char[]`` columns to a recording's Arrow table
(decoded as the outputs decode them: up to the first NUL, non-UTF-8 bytes as
``\\xNN``; each distinct value once, through a dictionary, not once per row), and
:data:`VIEWS` are the views over it: ``raw`` (every column of the file), ``events``
(what every event has), and one view per event type with its fields under the names
the JSON lines use. :func:`lookup_tables` are the small tables the views join: syscall
and open/exec call names.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ringtool.event.columns import cstr
from ringtool.event.exec_data import argv
from ringtool.event.layout import TraceLayout

#: The common fields every view starts with (``comm`` as text).
_COMMON = "host, ts, time, type, cpu, pid, tid, comm_text AS comm, cgroup"
_TASK = f"{_COMMON}, uid, gid"
#: Each view: name -> its SELECT over ``raw`` (joined with ``call_names`` as c and
#: ``syscall_names`` as s where a view names its syscall).
VIEWS: dict[str, str] = {
    "events": f"SELECT {_TASK}, ppid, type_id FROM raw",
    "exec": f"SELECT {_TASK}, data_text AS filename, args, ppid, ret, c.name AS syscall "
    "FROM raw LEFT JOIN call_names c ON raw.call = c.id WHERE type = 'exec'",
    "exit": f"SELECT {_TASK}, CASE WHEN aux <> 0 THEN (value >> 8) & 255 END AS exit_code, "
    "ppid FROM raw WHERE type = 'exit'",
    "fork": f"SELECT {_TASK}, aux AS child_pid, data_text AS child_comm, ppid "
    "FROM raw WHERE type = 'fork'",
    "open": f"SELECT {_TASK}, data_text AS path, value AS flags, mode, ret, c.name AS syscall "
    "FROM raw LEFT JOIN call_names c ON raw.call = c.id WHERE type = 'open'",
    "syscall": f"SELECT {_TASK}, s.name AS syscall, aux AS nr, value AS latency_ns, "
    "round(value / 1000, 1) AS latency_us, ret "
    "FROM raw LEFT JOIN syscall_names s ON raw.aux = s.nr WHERE type = 'syscall'",
    "mark": f"SELECT {_COMMON}, data_text AS text FROM raw WHERE type = 'mark'",
    "tcp": f"SELECT {_TASK}, family, saddr AS laddr, sport AS lport, daddr AS raddr, "
    "dport AS rport, active = 1 AS active, tx_bytes, rx_bytes, duration_ns, states, "
    "(states >> 1) & 1 = 0 AS failed, error FROM raw WHERE type = 'tcp'",
    "net": f"SELECT {_COMMON}, owner_uid AS uid, saddr AS src, daddr AS dst, sport, dport, proto, "
    "CASE WHEN dir <> 0 THEN 'egress' ELSE 'ingress' END AS dir, ifindex, len, captured, "
    "payload FROM raw WHERE type = 'net'",
}
#: How many syscall numbers ``syscall_names`` names.
SYSCALLS = 1024


def _texts(col: pa.ChunkedArray) -> pa.ChunkedArray:
    """A binary column as text (see the module doc), through its distinct values."""
    chunks = []
    for chunk in col.chunks:
        enc = pc.dictionary_encode(chunk)
        words = pa.array([None if b is None else cstr(b) for b in enc.dictionary.to_pylist()],
                         pa.string())  # fmt: skip
        chunks.append(pc.take(words, enc.indices))
    return pa.chunked_array(chunks, pa.string())


def _args(table: pa.Table) -> pa.ChunkedArray:
    """An exec row's arguments (a list of text; null for other rows and when argv was
    not read)."""
    out: list[list[str] | None] = []
    is_exec = pc.equal(table["type"].cast(pa.string()), "exec").to_pylist()
    data, aux2 = table["data"], table["aux2"]
    for i, yes in enumerate(is_exec):
        if not yes:
            out.append(None)
            continue
        args = argv(data[i].as_py() or b"", aux2[i].as_py() or 0)
        out.append(None if args is None else [cstr(a) for a in args])
    return pa.chunked_array([pa.array(out, pa.list_(pa.string()))])


def with_text(table: pa.Table) -> pa.Table:
    """``table`` (a recording's columns) with ``comm_text``, ``data_text`` (the first
    string of ``data``) and ``args`` (see the module doc)."""
    table = table.append_column("comm_text", _texts(table["comm"]))
    table = table.append_column("data_text", _texts(table["data"]))
    return table.append_column("args", _args(table))


def lookup_tables(layout: TraceLayout, syscall_name: Callable[[int], str]) -> dict[str, pa.Table]:
    """``call_names`` (``TRACE_CALL_*`` id -> name) and ``syscall_names`` (nr -> name)."""
    calls = sorted(layout.call_names.items())
    return {
        "call_names": pa.table({"id": pa.array([c for c, _ in calls], pa.uint32()),
                                "name": [n for _, n in calls]}),
        "syscall_names": pa.table({"nr": pa.array(range(SYSCALLS), pa.uint32()),
                                   "name": [syscall_name(nr) for nr in range(SYSCALLS)]}),
    }  # fmt: skip


__all__ = ["SYSCALLS", "VIEWS", "lookup_tables", "with_text"]
