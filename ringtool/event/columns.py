"""Column-wise decoding of a batch of ``struct trace_event`` records.

A batch is split by event type with numpy masks (:func:`by_type`); each group's
fields (:mod:`ringtool.event.fields`) are converted a whole column at a time
(:func:`values`, :func:`json_texts`), and the outputs put the results back in array
order. Per record, only the final line assembly is Python.

Strings (:func:`cstrings`) are cut at their first NUL with numpy (a record is
reserved unzeroed, so bytes after the NUL are stale), joined into one buffer and
decoded with one call; when every byte of the batch's strings is printable ASCII,
the outputs skip their per-string escaping. The result equals
:func:`ringtool.event.decode.cstr` of each element, always.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
import orjson

from ringtool.event import calls, disk_data, exec_data, tcp_data
from ringtool.event.fields import NET_LABEL, PROTOS, Field

Array = np.ndarray[Any, Any]
_NUMPY = orjson.OPT_SERIALIZE_NUMPY


def cstr(raw: bytes) -> str:
    """A C string field: up to the first NUL (the kernel leaves stale bytes after it
    in a reserved, unzeroed record), decoded as UTF-8 with every byte that is not
    UTF-8 written as ``\\xNN`` (``backslashreplace``): nothing is lost, and the text
    is always valid Unicode (JSON-safe, no surrogates)."""
    return raw.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")


class TypeGroup(NamedTuple):
    """The records of one event type: ``name``, their ``positions`` in the batch
    (``None``: the whole batch, in order) and the records."""

    name: str
    positions: Array | None
    rec: Array


class Texts(NamedTuple):
    """A string column: ``values`` (as :func:`cstr`), ``printable`` (every value is
    printable ASCII), ``plain`` (printable and without ``"`` or ``\\``: its JSON
    literal is the value in quotes) and ``same`` (True: one value, repeated; False:
    maybe not)."""

    values: list[str]
    printable: bool
    plain: bool
    same: bool = False


#: Integer codes below this (event types, call numbers) are counted with one
#: ``np.bincount`` instead of a sort.
SMALL_CODES = 4096


def code_counts(col: Array) -> tuple[list[int], list[int]]:
    """The distinct values of the integer column ``col``, ascending, and how often each
    occurs. Codes in ``[0, SMALL_CODES)`` (every type and call code) take one
    ``np.bincount`` over the column: no sort, and not ``np.unique(col)``, which on its
    first call in a process imports ``numpy.ma`` (numpy 2.x, integers, no ``return_*``
    flag: ~10 ms; the first mixed batch of a trace waited for it while its ring
    filled). Other values fall back to ``np.unique`` with ``return_counts``."""
    if len(col) == 0:
        return [], []
    if col.dtype.kind in "iu" and int(col.min()) >= 0 and int(col.max()) < SMALL_CODES:
        counts = np.bincount(col.astype(np.intp, copy=False))
        codes = np.flatnonzero(counts)
        return codes.tolist(), counts[codes].tolist()
    uniq, per = np.unique(col, return_counts=True)
    return uniq.tolist(), per.tolist()


def by_type(
    arr: Array, types: dict[int, str], views: Mapping[int, np.dtype[Any]] | None = None
) -> list[TypeGroup]:
    """The batch split by ``h.type`` (``types`` names the codes; an unknown code is
    named by its number), in order of type code. ``views``: the record struct of the
    types that have their own (:attr:`ringtool.event.layout.TraceLayout.views`): their
    group's records are viewed as it (same size: no copy)."""
    if len(arr) == 0:
        return []
    t = arr["h"]["type"]
    first = t[0]
    if (t == first).all():
        return [TypeGroup(types.get(int(first), str(int(first))), None,
                          _as_own(arr, int(first), views))]  # fmt: skip
    out = []
    for code in code_counts(t)[0]:
        positions = np.flatnonzero(t == code)
        rec = _as_own(arr.take(positions), code, views)
        out.append(TypeGroup(types.get(code, str(code)), positions, rec))
    return out


def _as_own(rec: Array, code: int, views: Mapping[int, np.dtype[Any]] | None) -> Array:
    """The records ``rec`` of type ``code`` viewed as their own struct, where it has one."""
    view = None if views is None else views.get(code)
    return rec if view is None else rec.view(view)


def in_array_order(
    arr: Array,
    types: dict[int, str],
    lines: Callable[[TypeGroup], list[str]],
    views: Mapping[int, np.dtype[Any]] | None = None,
) -> list[str]:
    """``lines(group)`` for each type group of ``arr`` (:func:`by_type`), put back in
    array order: one output line per record."""
    groups = by_type(arr, types, views)
    if len(groups) == 1 and groups[0].positions is None:
        return lines(groups[0])
    out: list[str] = [""] * len(arr)
    for g in groups:
        assert g.positions is not None
        for i, line in zip(g.positions.tolist(), lines(g), strict=True):
            out[i] = line
    return out


def column(rec: Array, name: str) -> Array:
    """The record column ``name`` (``h.NAME``: a header field)."""
    if name.startswith("h."):
        return rec["h"][name[2:]]  # type: ignore[no-any-return]
    return rec[name]  # type: ignore[no-any-return]


def cstrings(col: Array) -> Texts:
    """:func:`cstr` of every element of a ``S<width>`` column (see the module doc)."""
    n = len(col)
    width = col.dtype.itemsize
    if n == 0:
        return Texts([], True, True)
    u = col.view(np.dtype((np.uint8, (width,))))  # (n, width) bytes, also of a strided column
    same = _repeated(u)
    if same is not None:
        return same
    first = (u == 0).argmax(axis=1)  # the first NUL (0 when there is none)
    rows = np.arange(n)
    if u[rows, first].any():  # a string fills its whole field: no NUL to cut at
        return _texts([cstr(b) for b in col.tolist()])
    lens = first + 1  # each string with its NUL, which separates them in the buffer
    starts = np.cumsum(lens) - lens
    at = np.arange(int(lens.sum())) - np.repeat(starts, lens)  # each byte's place in its row
    return _decode(u[np.repeat(rows, lens), at].tobytes(), n)  # gathered, no copy of u


def _repeated(u: Array) -> Texts | None:
    """The column as one repeated string when every row holds the first row's string
    (its bytes up to and with its NUL are the same in every row, so every row's first
    NUL is at the same place): compares only that prefix, not the whole field. None
    when not (or when the first row has no NUL)."""
    nul = np.flatnonzero(u[0] == 0)
    if len(nul) == 0:
        return None
    one = int(nul[0]) + 1
    head = u[0, :one]
    # the last row first: a cheap "no" when the strings differ
    if not (u[-1, :one] == head).all() or not (u[:, :one] == head).all():
        return None
    texts = _decode(head.tobytes(), 1)
    return Texts(texts.values * len(u), texts.printable, texts.plain, same=True)


#: Bytes of a plain JSON string (printable ASCII but ``"`` and ``\``), and the two.
_PLAIN = bytes(b for b in range(0x20, 0x7F) if b not in b'"\\')
_QUOTES = b'"\\\0'


def _decode(blob: bytes, n: int) -> Texts:
    """The ``n`` NUL-terminated strings in ``blob`` as :func:`cstr` gives them."""
    if blob.isascii():
        values = blob.decode("ascii").split("\0")
        other = blob.translate(None, _PLAIN)  # the NULs, and what is not plain
        plain = len(other) == n
        printable = plain or not other.translate(None, _QUOTES)
    else:
        values = [b.decode("utf-8", "backslashreplace") for b in blob.split(b"\0")]
        printable = plain = False
    values.pop()  # after the last NUL
    return Texts(values, printable, plain)


def _texts(values: list[str]) -> Texts:
    joined = "".join(values)
    printable = joined.isascii() and joined.isprintable()
    return Texts(values, printable, printable and '"' not in joined and "\\" not in joined)


def wall_seconds(ts: Array, offset_ns: int) -> Array:
    """CLOCK_MONOTONIC ns to CLOCK_REALTIME seconds (float64)."""
    return (ts.astype(np.int64) + offset_ns) / 1e9  # type: ignore[no-any-return]


def _exit_codes(rec: Array, f: Field) -> list[int | None]:
    codes = ((column(rec, f.column) >> 8) & 0xFF).tolist()
    return [c if known else None for c, known in zip(codes, rec["aux"].tolist(), strict=True)]


def _argvs(data: Array, aux2: Array) -> list[list[str] | None]:
    out: list[list[str] | None] = []
    for raw, a in zip(data.tolist(), aux2.tolist(), strict=True):
        args = exec_data.argv(raw, a)
        out.append(None if args is None else [b.decode("utf-8", "backslashreplace") for b in args])
    return out


def _addr_text(family: int, raw: bytes) -> str:
    if family == 4:
        return str(ipaddress.IPv4Address(raw[:4]))
    if family == 6:
        return str(ipaddress.IPv6Address(raw[:16]))
    return ""


def addresses(rec: Array, col: Array) -> list[str]:
    """The packet addresses of the ``u8[16]`` column ``col`` as text, by the records'
    ``family`` (``addr`` in :mod:`ringtool.event.fields`): each distinct (family,
    address) is written once."""
    n = len(col)
    if n == 0:
        return []
    if (col == col[0]).all() and (rec["family"] == rec["family"][0]).all():  # one address
        return [_addr_text(int(rec["family"][0]), col[0].tobytes())] * n
    keys = np.empty((n, 17), np.uint8)
    keys[:, 0] = rec["family"]
    keys[:, 1:] = col
    uniq, inverse = np.unique(keys.view(np.dtype((np.void, 17))).reshape(-1), return_inverse=True)
    texts = [_addr_text(k[0], k[1:]) for k in uniq.tolist()]
    return [texts[i] for i in inverse.reshape(-1).tolist()]


def _named(col: Array, name: Callable[[int], str]) -> list[str]:
    """``name(code)`` of each integer of ``col``, called once per distinct code."""
    codes = col.tolist()
    names = {c: name(c) for c in set(codes)}
    return [names[c] for c in codes]


def values(rec: Array, f: Field, offset_ns: int, syscall_name: Callable[[int], str]) -> list[Any]:
    """Field ``f`` of every record of ``rec``, as Python values."""
    col = column(rec, f.column)
    kind = f.kind
    if kind == "int":
        return col.tolist()  # type: ignore[no-any-return]
    if kind == "str":
        return cstrings(col).values
    if kind == "packet_comm":
        return [v or NET_LABEL for v in cstrings(col).values]
    if kind == "time":
        return wall_seconds(col, offset_ns).tolist()  # type: ignore[no-any-return]
    if kind == "exit_code":
        return _exit_codes(rec, f)
    if kind == "syscall":
        return [syscall_name(nr) for nr in col.tolist()]
    if kind == "latency_us":
        return [round(v / 1000, 1) for v in col.tolist()]
    if kind == "argv":
        return _argvs(col, rec["aux2"])
    if kind == "truncated":
        return ((col & exec_data.TRUNCATED) != 0).tolist()  # type: ignore[no-any-return]
    if kind == "low32":
        return (col & 0xFFFFFFFF).tolist()  # type: ignore[no-any-return]
    if kind == "high32":
        return (col >> 32).tolist()  # type: ignore[no-any-return]
    if kind == "call":
        return calls.call_names(col)
    if kind == "addr":
        return addresses(rec, col)
    if kind == "proto":
        return _named(col, lambda p: PROTOS.get(p, str(p)))
    if kind == "direction":
        return _named(col, lambda d: "egress" if d else "ingress")
    if kind == "ip":
        return [tcp_data.address(bytes(a)) for a in col.tolist()]
    if kind == "flag":
        return (col != 0).tolist()  # type: ignore[no-any-return]
    if kind == "tcp_states":
        return [tcp_data.state_names(m) for m in col.tolist()]
    if kind == "tcp_failed":
        return [tcp_data.failed(m) for m in col.tolist()]
    if kind == "blk_dev":
        return _named(col, disk_data.dev_text)
    if kind == "blk_disk":
        return _named(col, disk_data.disk_name)
    if kind == "blk_op":
        return [disk_data.op(r) for r in cstrings(col).values]
    if kind == "blk_sync":
        return [disk_data.sync(r) for r in cstrings(col).values]
    raise ValueError(f"field {f.key}: unknown kind {kind!r}")


def number_texts(col: Array) -> list[str]:
    """An integer or float column as JSON numbers, one C call (orjson); floats only
    where orjson writes them as ``repr`` does (see :func:`float_texts`)."""
    return orjson.dumps(np.ascontiguousarray(col), option=_NUMPY)[1:-1].decode().split(",")


def float_texts(x: Array) -> list[str]:
    """``repr`` of each float: orjson's shortest round-trip digits where its notation
    is Python's (0, and magnitudes in [1e-4, 1e16)), else ``repr`` itself."""
    a = np.abs(x)
    if (((a >= 1e-4) | (a == 0)) & (a < 1e16)).all():
        return number_texts(x)
    return [repr(v) for v in x.tolist()]


__all__ = [
    "Texts",
    "TypeGroup",
    "addresses",
    "by_type",
    "column",
    "cstr",
    "cstrings",
    "float_texts",
    "number_texts",
    "values",
    "wall_seconds",
]
