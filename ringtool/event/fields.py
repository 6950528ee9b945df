"""The event fields: the ONE spec of which record column each output field comes from.

Every output (event dicts of :meth:`ringtool.event.decode.Decoder.decode`, JSON lines,
``--no-tui`` columns, ``--csv``, ``--fields``) is built from this table, so a field
added here appears in all of them. The fields of each type are its entry's in
:mod:`ringtool.event.registry` (the one table of event types); this module adds the
common ones. Imports nothing heavy: the CLI validates
``--fields`` against :data:`FIELD_NAMES` without loading numpy.

A :class:`Field` names the output ``key``, the record ``column`` it is read from
(a field of ``struct trace_event``; ``h.NAME`` for the common header) and its
``kind``, which says how the column becomes a value (see
:mod:`ringtool.event.columns` for the conversions):

* ``int``: the integer as is;
* ``str``: a C string (:func:`ringtool.event.decode.cstr`: up to the first NUL,
  non-UTF-8 bytes as ``\\xNN``);
* ``time``: CLOCK_MONOTONIC ns to CLOCK_REALTIME seconds (float);
* ``exit_code``: ``(column >> 8) & 0xFF`` when the record's ``aux`` is non-zero (the
  code is known), else ``None``;
* ``syscall``: the syscall's name for the number in the column;
* ``latency_us``: ns to µs, rounded to 0.1 (``round(ns / 1000, 1)``);
* ``argv``: an exec's arguments, a list of strings (each as ``str``), from ``data``
  after the filename and the count in ``aux2``; ``None`` when argv was not read
  (:mod:`ringtool.event.exec_data`);
* ``truncated``: ``True`` when the column (an exec's ``aux2``) has
  ``TRACE_ARGS_TRUNCATED`` set: more arguments were passed than the record holds;
* ``low32``/``high32``: the column's low/high 32 bits;
* ``call``: an open's or exec's syscall (``openat``, ``creat``, ``execveat``, ...)
  from the record's ``call`` (:mod:`ringtool.event.calls`), ``None`` when unknown;
* ``addr``: a packet's address (a ``u8[16]`` column) as text, by the record's
  ``family`` (4: dotted IPv4 of the first 4 bytes, 6: IPv6 as :mod:`ipaddress` writes
  it, else ``""``);
* ``proto``: an IP protocol number by name (:data:`PROTOS`; another number as its
  digits);
* ``direction``: ``"egress"`` when the column is non-zero, else ``"ingress"``;
* ``ip``: a 16-byte address as text, IPv4 (held as ``::ffff:a.b.c.d``) dotted;
* ``flag``: ``True`` when the column is non-zero;
* ``tcp_states``: the names of the TCP states whose bits the column has
  (``["ESTABLISHED", "SYN_SENT", ...]``, :mod:`ringtool.event.tcp_data`);
* ``tcp_failed``: ``True`` when those states lack ESTABLISHED;
* ``blk_dev``: a kernel ``dev_t`` as ``"major:minor"``; ``blk_disk``: the name of
  that block device (``loop0``), ``""`` where /sys/dev/block has none;
* ``blk_op``: the operation of blktrace's ``rwbs`` letters (``read``, ``write``,
  ``flush``, ``discard``, ...); ``blk_sync``: ``True`` when they have ``S``
  (:mod:`ringtool.event.disk_data`).
* ``packet_comm``: a packet's comm (a string column): its TCP connection's owner's,
  :data:`NET_LABEL` where it is empty (TC programs run without a task: no known
  connection), so every output shows the same name.

Each kind's JSON type is :data:`KIND_JSON` (the JSON Schema of docs/schema.md).

A type whose records are a struct of their own (tcp: ``struct trace_tcp``, disk,
:data:`ringtool.event.layout.RECORD_STRUCTS`) names that struct's fields.

``uid``/``gid`` (the task's real ids) are common to every RINGBUF event type; net
events (``struct trace_net``: TC programs, run without a task) have none: their
common fields are :data:`HEADER` only (:data:`TASKLESS`), and their own fields begin
with ``uid``, their TCP connection owner's (``owner_uid``; 0 with no owner).

Every event starts with ``type`` (its name), then :data:`COMMON` (:data:`HEADER` for
a type of :data:`TASKLESS`), then its type's :data:`BY_TYPE` fields, in this order.
"""

from __future__ import annotations

from collections.abc import Iterable

from ringtool.event.registry import EVENT_TYPES, Field

#: The comm of a packet no process is known for: TC programs run without a task
#: (softirq, a queue's transmit); only a TCP connection's owner names one.
NET_LABEL = "[net]"

#: The first key of every event (and every other ``--json`` line): its type's name.
TYPE = Field("type", "h.type", "type", "", "the event's type (see the types below)")

_COMM = "the thread's name (task comm, at most 15 bytes)"
#: Fields of the common header (``struct trace_hdr``) of every record, after ``type``.
HEADER: tuple[Field, ...] = (
    Field("ts", "h.ts", "time", "s", "when it happened: seconds since the epoch (UTC)"),
    Field("cpu", "h.cpu", "int", "", "the CPU it happened on"),
    Field(
        "pid",
        "h.pid",
        "int",
        "",
        "the process id (thread group id; net: its TCP connection's owner, else 0)",
    ),
    Field("tid", "h.tid", "int", "", "the thread id (net: the owner's, else 0)"),
    Field("comm", "h.comm", "str", "", _COMM),
    Field(
        "cgroup", "h.cgroup", "int", "", "the cgroup v2 id of the task (net: the owner's, else 0)"
    ),
)

#: Fields of every event of a task, after ``type``.
COMMON: tuple[Field, ...] = (
    *HEADER,
    Field("uid", "uid", "int", "", "the task's real user id"),
    Field("gid", "gid", "int", "", "the task's real group id"),
)

_NET_COMM = f"its TCP connection owner's thread name; {NET_LABEL}: none is known"
#: The common fields of a packet (:data:`TASKLESS`): the header's, its comm
#: :data:`NET_LABEL` (no task).
NET_HEADER: tuple[Field, ...] = tuple(
    Field("comm", f.column, "packet_comm", "", _NET_COMM)
    if f.key == "comm" else f
    for f in HEADER
)  # fmt: skip

_STR: dict[str, object] = {"type": "string"}
_INT: dict[str, object] = {"type": "integer"}
_BOOL: dict[str, object] = {"type": "boolean"}
_STRS: dict[str, object] = {"type": "array", "items": _STR}
#: The JSON Schema of each field kind's values.
KIND_JSON: dict[str, dict[str, object]] = {
    "type": _STR, "int": _INT, "str": _STR, "time": {"type": "number"},
    "exit_code": {"type": ["integer", "null"]}, "syscall": _STR,
    "latency_us": {"type": "number", "minimum": 0},
    "argv": {"type": ["array", "null"], "items": _STR}, "truncated": _BOOL,
    "low32": _INT, "high32": _INT, "call": {"type": ["string", "null"]}, "addr": _STR,
    "proto": _STR, "direction": {"enum": ["ingress", "egress"]}, "ip": _STR, "flag": _BOOL,
    "tcp_states": _STRS, "tcp_failed": _BOOL, "packet_comm": _STR, "blk_dev": _STR,
    "blk_disk": _STR, "blk_op": _STR, "blk_sync": _BOOL,
}  # fmt: skip

#: The types whose records have no task (no ``uid``/``gid``): :data:`HEADER` only.
TASKLESS = frozenset(t.name for t in EVENT_TYPES if t.taskless)

#: ``proto`` of a packet: IP protocol numbers by name (others: their digits).
PROTOS = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmp6"}

#: The type-specific fields of the event types, in output order: each type's
#: :attr:`~ringtool.event.registry.EventType.fields`.
BY_TYPE: dict[str, tuple[Field, ...]] = {t.name: t.fields for t in EVENT_TYPES if t.fields}


def fields_of(type_name: str) -> tuple[Field, ...]:
    """``COMMON`` (``HEADER`` for a :data:`TASKLESS` type) plus the type's own fields
    (just ``COMMON`` for an unknown type)."""
    return (NET_HEADER if type_name in TASKLESS else COMMON) + BY_TYPE.get(type_name, ())


def names_of(types: Iterable[str]) -> tuple[str, ...]:
    """The field names of events of ``types`` (all: :data:`FIELD_NAMES`), in the order
    of :data:`FIELD_NAMES` (``type``, the common fields, then each type's fields as
    first listed): the ``--csv`` columns of a trace of those types."""
    wanted = {f.key for t in types for f in fields_of(t)}
    return tuple(k for k in FIELD_NAMES if k == "type" or k in wanted)


def _all_names() -> tuple[str, ...]:
    names = ["type", *(f.key for f in COMMON)]
    for fields in BY_TYPE.values():
        names.extend(f.key for f in fields)
    return tuple(dict.fromkeys(names))


#: Every output field name, in a stable order: ``type``, the common fields, then each
#: type's fields as first listed.
FIELD_NAMES: tuple[str, ...] = _all_names()


def field_name(text: str) -> str | None:
    """The field ``text`` names: its key (``ts``) or its column header (``TS``), in
    any case; None when no field has that name."""
    key = text.strip().lower()
    return key if key in FIELD_NAMES else None


__all__ = [
    "BY_TYPE", "COMMON", "FIELD_NAMES", "HEADER", "KIND_JSON", "NET_HEADER", "NET_LABEL", "PROTOS",
    "TASKLESS", "TYPE", "Field", "field_name", "fields_of", "names_of",
]  # fmt: skip
