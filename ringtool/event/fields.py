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
* ``ip``: a 16-byte address as text, IPv4 (held as ``::ffff:a.b.c.d``) dotted;
* ``flag``: ``True`` when the column is non-zero;
* ``tcp_states``: the names of the TCP states whose bits the column has
  (``["ESTABLISHED", "SYN_SENT", ...]``, :mod:`ringtool.event.tcp_data`);
* ``tcp_failed``: ``True`` when those states lack ESTABLISHED.

A type whose records are a struct of their own (tcp: ``struct trace_tcp``,
:data:`ringtool.event.layout.RECORD_STRUCTS`) names that struct's fields.

``uid``/``gid`` (the task's real ids) are common to every RINGBUF event type; net
events (TC programs, run without a task) have none.

Every event starts with ``type`` (its name), then :data:`COMMON`, then its type's
:data:`BY_TYPE` fields, in this order. Net events are decoded per packet
(:meth:`ringtool.event.decode.Decoder.decode_net`) into :data:`NET_KEYS`.
"""

from __future__ import annotations

from ringtool.event.registry import EVENT_TYPES, Field

#: Fields of every event, after ``type``.
COMMON: tuple[Field, ...] = (
    Field("ts", "h.ts", "time"),
    Field("cpu", "h.cpu", "int"),
    Field("pid", "h.pid", "int"),
    Field("tid", "h.tid", "int"),
    Field("comm", "h.comm", "str"),
    Field("cgroup", "h.cgroup", "int"),
    Field("uid", "uid", "int"),
    Field("gid", "gid", "int"),
)

#: The type-specific fields of the RINGBUF event types, in output order: each type's
#: :attr:`~ringtool.event.registry.EventType.fields` (net has none: :data:`NET_KEYS`).
BY_TYPE: dict[str, tuple[Field, ...]] = {t.name: t.fields for t in EVENT_TYPES if t.fields}

#: The type-specific keys of a net event (decoded per packet, not from this table).
NET_KEYS: tuple[str, ...] = (
    "src", "dst", "sport", "dport", "proto", "len", "ifindex", "dir", "captured",
)  # fmt: skip


def fields_of(type_name: str) -> tuple[Field, ...]:
    """``COMMON`` plus the type's own fields (just ``COMMON`` for an unknown type)."""
    return COMMON + BY_TYPE.get(type_name, ())


def _all_names() -> tuple[str, ...]:
    names = ["type", *(f.key for f in COMMON)]
    for fields in BY_TYPE.values():
        names.extend(f.key for f in fields)
    names.extend(NET_KEYS)
    return tuple(dict.fromkeys(names))


#: Every output field name, in a stable order: ``type``, the common fields, then each
#: type's fields as first listed (the default ``--csv`` columns).
FIELD_NAMES: tuple[str, ...] = _all_names()

__all__ = ["BY_TYPE", "COMMON", "FIELD_NAMES", "NET_KEYS", "Field", "fields_of"]
