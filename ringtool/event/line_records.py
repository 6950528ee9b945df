"""One event type's JSON-line columns back into the layout's records: the inverse of
each field kind of :mod:`ringtool.event.fields`, a whole column at a time.

:func:`to_records` takes the table :func:`ringtool.event.line_columns.parse_lines`
gives for one type and fills a zeroed array of the type's struct, column by column
(numpy and pyarrow compute; Python runs once per *distinct* value of a named column:
an address, a device, a protocol, a call, a TCP state, a string with ``\\xNN``
escapes), and says which rows hold a value no record holds (a number out of its
member's range, a string longer than its ``char[]``, a name no number has, a
missing value): ``bad``.

Each column is written from the one field that determines it (an ``int`` field, a
string, the time, ...); the fields derived from a column another field writes (a
syscall's name from ``nr``, a disk's ``op``, ``sync`` from ``rwbs``, a tcp's
``failed`` from its states) are not read: the caller encodes the records again
(:func:`ringtool.event.json_lines.batch_text`) and keeps only the lines that come
back as they were, so a line whose derived values disagree is refused there. Two
values are named where the records are read, not kept in them (:data:`LOCAL_KINDS`):
a disk's name (``/sys/dev/block`` of the reading machine) and a syscall's name (its
table of numbers), as for records a host sent as rows.

Strings: the JSON text of a ``char[]`` member is its bytes decoded as UTF-8 with each
byte that is not written ``\\xNN`` (:func:`ringtool.event.columns.cstr`); the bytes
are those escapes undone where that gives the text back, else the text's UTF-8.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ringtool.event import exec_data
from ringtool.event.calls import NAMES as CALL_NAMES
from ringtool.event.columns import column, cstr
from ringtool.event.disk_data import MINOR_BITS
from ringtool.event.fields import NET_LABEL, PROTOS, Field, fields_of
from ringtool.event.layout import TraceLayout
from ringtool.event.line_columns import record_dtype
from ringtool.event.tcp_data import STATE_NAMES

Array = np.ndarray[Any, Any]
#: Kinds named where the records are read, not kept (see the module doc).
LOCAL_KINDS = frozenset(("blk_disk", "syscall"))
#: A ``\\xNN`` escape of a byte that is not UTF-8 (0x80 and up: ASCII bytes are).
_ESCAPE = re.compile(rb"\\x([89a-f][0-9a-f])")
_CALLS = {name: code for code, name in CALL_NAMES.items()}
_STATE_BITS = {**{f"STATE_{n}": 1 << n for n in range(16)},
               **{name: 1 << n for n, name in STATE_NAMES.items()}}  # fmt: skip
_PROTO_NUMBERS = {name: n for n, name in PROTOS.items()}


class Built(NamedTuple):
    """Records of one type (its struct: :func:`record_dtype`) and, per row, whether a
    value of its line is one no record holds (the row is zeros there)."""

    rec: Array
    bad: Array


def _unescape(text: str) -> bytes:
    raw = text.encode()
    if b"\\x" in raw:
        undone = _ESCAPE.sub(lambda m: bytes([int(m[1], 16)]), raw)
        if cstr(undone) == text:
            return undone
    return raw


def c_bytes(col: pa.Array) -> pa.Array:
    """A string column as the bytes of ``char[]`` members (see the module doc)."""
    out = col.cast(pa.binary())
    mask = pc.match_substring(col, "\\x").fill_null(False)
    if not pc.any(mask).as_py():
        return out
    enc = pc.dictionary_encode(col.filter(mask))
    fixed = pa.array([_unescape(t) for t in enc.dictionary.to_pylist()], pa.binary())
    return pc.replace_with_mask(out, mask, pc.take(fixed, enc.indices))


def _valid(col: pa.Array) -> Array:
    return np.asarray(col.is_valid())


def _put_bytes(out: Array, col: pa.Array, bad: Array) -> None:
    """Binary ``col`` into the ``char[]`` column ``out``, each value's bytes then
    zeros; a value too long, or null: bad (zeros). One gather of the bytes: each
    byte's place in the output is its place in the buffer plus its row's shift."""
    n, width = len(col), out.dtype.itemsize
    bufs = col.buffers()
    offsets = np.frombuffer(bufs[1], np.int32)[col.offset : col.offset + n + 1].astype(np.int64)
    lens = np.diff(offsets)
    fits = _valid(col) & (lens <= width)
    bad |= ~fits
    flat = np.zeros(n * width, np.uint8)
    if n and bufs[2] is not None and int(lens.sum()):
        data = np.frombuffer(bufs[2], np.uint8)[offsets[0] : offsets[-1]]
        shift = np.repeat(np.arange(n, dtype=np.int64) * width - offsets[:-1], lens)
        dest = np.arange(offsets[0], offsets[-1], dtype=np.int64) + shift
        if not fits.all():
            keep = np.repeat(fits, lens)
            data, dest = data[keep], dest[keep]
        flat[dest] = data
    out[:] = flat.view(out.dtype)


def _put_ints(out: Array, vals: Array, ok: Array, bad: Array) -> None:
    """Integers ``vals`` (where ``ok``) into ``out``; out of its dtype's range: bad."""
    info = np.iinfo(out.dtype)
    if vals.dtype.kind == "u":
        ok = ok & (vals <= info.max)
    elif vals.dtype.kind == "i":
        ok = ok & (vals >= info.min) & (vals <= min(info.max, np.iinfo(np.int64).max))
    bad |= ~ok
    out[:] = np.where(ok, vals, 0).astype(out.dtype)


def _by_value(col: pa.Array, value: Callable[[Any], int | None]) -> tuple[Array, Array]:
    """``value(v)`` of each row's ``v``, computed once per distinct ``v``; with the
    rows where it is a number (not None, not null)."""
    enc = pc.dictionary_encode(col)
    got = [value(v) for v in enc.dictionary.to_pylist()]
    table = np.array([0 if g is None else g for g in got] + [0], np.int64)
    known = np.array([g is not None for g in got] + [False])
    idx = np.asarray(enc.indices.fill_null(len(got)), np.int64)
    return table[idx], known[idx]


class _Job(NamedTuple):
    rec: Array
    table: pa.Table
    bad: Array
    offset_ns: int
    fields: dict[str, Field]


def _int(job: _Job, f: Field, col: pa.Array) -> None:
    _put_ints(column(job.rec, f.column), np.asarray(col.fill_null(0)), _valid(col), job.bad)


def _str(job: _Job, f: Field, col: pa.Array) -> None:
    if any(g.kind == "argv" and g.column == f.column for g in job.fields.values()):
        return  # exec's data: the filename and the arguments (_argv)
    _put_bytes(column(job.rec, f.column), c_bytes(col), job.bad)


def _packet_comm(job: _Job, f: Field, col: pa.Array) -> None:
    empty = pc.equal(col, NET_LABEL).fill_null(False)
    _put_bytes(column(job.rec, f.column), c_bytes(pc.if_else(empty, "", col)), job.bad)


def _search(
    guess: Array, want: Array, ok: Array, encode: Callable[[Array], Array]
) -> tuple[Array, Array]:
    """Integer-valued floats near ``guess`` whose ``encode`` is ``want`` (the guess,
    else its neighbours, where rounding put it off), and where one was found."""
    found = ok & (encode(guess) == want)
    step = np.maximum(np.spacing(np.abs(guess)), 1.0)
    for d in (1, -1, 2, -2, 3, -3):
        off = ok & ~found
        if not off.any():
            break
        alt = guess + d * step
        hit = off & (encode(alt) == want)
        guess = np.where(hit, alt, guess)
        found |= hit
    return guess, found


def _time(job: _Job, f: Field, col: pa.Array) -> None:
    """The kernel ns whose wall-clock seconds (``(ns + offset) / 1e9``, float64, as
    :func:`ringtool.event.columns.wall_seconds`) are the value."""
    wall = np.asarray(col.fill_null(np.nan), np.float64)
    ok = np.isfinite(wall) & (np.abs(wall) <= 2.0**63 / 1e9)
    guess = np.rint(np.where(ok, wall, 0.0) * 1e9)
    wall_ns, found = _search(guess, wall, ok, lambda ns: ns / 1e9)
    job.bad[:] |= ~found
    # as the encoder reads it: ts as int64 plus the offset (wrapping as it does)
    top = found & (wall_ns >= 2.0**63)  # 2**63 as a float: the largest int64 is the same
    ns = np.where(found & ~top, wall_ns, 0.0).astype(np.int64)
    ns[top] = np.iinfo(np.int64).max
    ts = ns - np.int64(job.offset_ns) if job.offset_ns else ns
    column(job.rec, f.column)[:] = np.where(found, ts, 0).view(np.uint64)


def _exit_code(job: _Job, f: Field, col: pa.Array) -> None:
    code = np.asarray(col.fill_null(0), np.int64)
    known = _valid(col)
    job.bad[:] |= (code < 0) | (code > 255)
    column(job.rec, f.column)[:] = (code & 0xFF) << 8
    job.rec["aux"] = known


def _latency(job: _Job, f: Field, col: pa.Array) -> None:
    """The ns nearest to ``value * 1000``, exactly (``round(ns / 1000, 1)`` gives the
    value back: see :func:`times_1000`)."""
    us = np.asarray(col.fill_null(-1.0), np.float64)
    ok = np.isfinite(us) & (us >= 0) & (us <= 2.0**64 / 1000)
    job.bad[:] |= ~ok
    column(job.rec, f.column)[:] = times_1000(np.where(ok, us, 0.0))


def times_1000(us: Array) -> Array:
    """``round(x * 1000)`` (ties to even) of each float64 ``x`` in [0, 2**64 / 1000],
    computed exactly in integers (``x`` is ``m / 2**k``: ``1000 * m`` shifted), as
    unsigned 64-bit (2**64 itself as the largest: it divides by 1000 to the same
    float). A value of one decimal (what ``round(ns / 1000, 1)`` wrote) is then within
    0.0005 of ``ns / 1000``, less than its rounding to a tenth moves it."""
    mant, exp = np.frexp(us)
    m = (mant * 2.0**53).astype(np.int64)
    k = (53 - exp).astype(np.int64)
    big = k <= 0  # x >= 2**52: an integer, x * 1000 exact (k is 0, -1 or -2 here)
    ten = m.astype(np.uint64) * np.uint64(1000)
    whole = ten << np.clip(-k, 0, 2).astype(np.uint64)
    s = np.clip(k, 1, 62)
    prod = m * 1000  # < 2**63
    q = prod >> s
    rest = prod - (q << s)
    half = np.left_shift(np.int64(1), s - 1)
    q = q + ((rest > half) | ((rest == half) & (q & 1 == 1)))
    q = np.where(k > 62, 0, q)
    top = us >= 2.0**64 / 1000  # 2**64 and above: wrapped
    out = np.where(big, whole, q.astype(np.uint64))
    return np.where(top, np.iinfo(np.uint64).max, out)


def _argv(job: _Job, f: Field, col: pa.Array) -> None:
    """An exec's ``data`` (the filename, NUL, each argument, NUL) and ``aux2`` (their
    count, ``TRUNCATED``, ``MISSING`` when argv is null)."""
    name = next(g.key for g in job.fields.values() if g.kind == "str" and g.column == f.column)
    filename = c_bytes(_col(job.table, name))
    missing = np.asarray(col.is_null())
    count = np.asarray(pc.list_value_length(col).fill_null(0), np.int64)
    offsets = pa.array(np.concatenate(([0], np.cumsum(count))).astype(np.int32))
    args = pa.ListArray.from_arrays(offsets, c_bytes(col.flatten()))
    joined = pc.binary_join_element_wise(filename, pc.binary_join(args, b"\0"), b"\0")
    # empty arguments at the end are the field's end (exec_data.argv): no bytes
    joined = pc.replace_substring_regex(joined, pattern="\\x00+\\z", replacement="")
    _put_bytes(column(job.rec, f.column), pc.if_else(pa.array(missing), filename, joined),
               job.bad)  # fmt: skip
    cut = next((g for g in job.fields.values() if g.kind == "truncated"), None)
    flags = np.where(missing, exec_data.MISSING, 0)
    if cut is not None:
        trunc = _col(job.table, cut.key)
        job.bad[:] |= ~_valid(trunc)
        flags |= np.where(np.asarray(trunc.fill_null(False)), exec_data.TRUNCATED, 0)
    job.bad[:] |= count > exec_data.ARGC_MASK
    job.rec["aux2"] = (np.minimum(count, exec_data.ARGC_MASK) | flags).astype(np.uint32)


def _call(job: _Job, f: Field, col: pa.Array) -> None:
    """A syscall's ``TRACE_CALL_*`` number by its name; null: 0 (not known)."""
    vals, known = _by_value(col, _CALLS.get)
    _put_ints(column(job.rec, f.column), vals, known | ~_valid(col), job.bad)


def _ip_bytes(text: str, mapped: bool) -> tuple[int, bytes] | None:
    """``(family, 16 bytes)`` of an address's text (IPv4: the first 4 bytes, or
    ``::ffff:a.b.c.d`` when ``mapped``); ``(0, zeros)`` for ``""`` when not mapped."""
    if text == "" and not mapped:
        return 0, bytes(16)
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return None
    if str(ip) != text:
        return None
    if ip.version == 4:
        return 4, (bytes(10) + b"\xff\xff" + ip.packed) if mapped else ip.packed + bytes(12)
    return 6, ip.packed


def _addresses(job: _Job, f: Field, col: pa.Array, mapped: bool) -> None:
    enc = pc.dictionary_encode(col)
    got = [_ip_bytes(v, mapped) if v is not None else None for v in enc.dictionary.to_pylist()]
    raw = np.zeros((len(got) + 1, 16), np.uint8)
    fam = np.zeros(len(got) + 1, np.int64)
    for i, g in enumerate(got):
        if g is not None:
            fam[i], raw[i] = g[0], np.frombuffer(g[1], np.uint8)
    known = np.array([g is not None for g in got] + [False])
    idx = np.asarray(enc.indices.fill_null(len(got)), np.int64)
    job.bad[:] |= ~known[idx]
    column(job.rec, f.column)[:] = raw[idx]
    if not mapped:  # a packet's family is its addresses'
        first = f.key == next(g.key for g in job.fields.values() if g.kind == "addr")
        if first:
            job.rec["family"] = fam[idx]
        else:
            job.bad[:] |= job.rec["family"] != fam[idx]


def _addr(job: _Job, f: Field, col: pa.Array) -> None:
    _addresses(job, f, col, mapped=False)


def _ip(job: _Job, f: Field, col: pa.Array) -> None:
    _addresses(job, f, col, mapped=True)


def _proto(v: str) -> int | None:
    if v in _PROTO_NUMBERS:
        return _PROTO_NUMBERS[v]
    return int(v) if v.isdigit() and v.isascii() and len(v) < 4 else None


def _named(value: Callable[[str], int | None]) -> Callable[[_Job, Field, pa.Array], None]:
    def put(job: _Job, f: Field, col: pa.Array) -> None:
        vals, known = _by_value(col, value)
        _put_ints(column(job.rec, f.column), vals, known, job.bad)

    return put


def _dev(v: str) -> int | None:
    major, colon, minor = v.partition(":")
    if not (colon and major.isdigit() and minor.isdigit() and major.isascii() and minor.isascii()):
        return None
    if len(major) > 4 or len(minor) > 7 or int(minor) >> MINOR_BITS or int(major) >> 12:
        return None
    return int(major) << MINOR_BITS | int(minor)


def _flag(job: _Job, f: Field, col: pa.Array) -> None:
    vals = np.asarray(col.fill_null(False), np.int64)
    _put_ints(column(job.rec, f.column), vals, _valid(col), job.bad)


def _states(job: _Job, f: Field, col: pa.Array) -> None:
    flat = col.flatten()
    bits, known = _by_value(flat, _STATE_BITS.get)
    rows = np.asarray(pc.list_parent_indices(col), np.int64)
    mask = np.bincount(rows, weights=bits, minlength=len(col)).astype(np.int64)
    unknown = np.bincount(rows, weights=~known, minlength=len(col)) > 0
    _put_ints(column(job.rec, f.column), mask, _valid(col) & ~unknown, job.bad)


#: Field kind -> how its column is written; kinds not here are derived (module doc).
WRITERS: dict[str, Callable[[_Job, Field, pa.Array], None]] = {
    "int": _int, "str": _str, "packet_comm": _packet_comm, "time": _time,
    "exit_code": _exit_code, "latency_us": _latency, "argv": _argv, "call": _call,
    "addr": _addr, "ip": _ip, "proto": _named(_proto),
    "direction": _named({"ingress": 0, "egress": 1}.get), "flag": _flag,
    "tcp_states": _states, "blk_dev": _named(_dev),
}  # fmt: skip


def _col(table: pa.Table, key: str) -> pa.Array:
    return table.column(key).combine_chunks()


def to_records(layout: TraceLayout, type_name: str, table: pa.Table, offset_ns: int) -> Built:
    """The records of ``table`` (the lines of ``type_name``, parsed) with the realtime
    offset ``offset_ns`` (see the module doc)."""
    n = table.num_rows
    rec = np.zeros(n, record_dtype(layout, type_name))
    rec["h"]["type"] = layout.type_id(type_name)
    job = _Job(rec, table, np.zeros(n, bool), offset_ns, {f.key: f for f in fields_of(type_name)})
    if n:
        for f in job.fields.values():
            write = WRITERS.get(f.kind)
            if write is not None:
                write(job, f, _col(table, f.key))
    return Built(rec, job.bad)


__all__ = ["LOCAL_KINDS", "WRITERS", "Built", "c_bytes", "times_1000", "to_records"]
