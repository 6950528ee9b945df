"""Event JSON lines parsed a whole batch at a time (pyarrow), into fixed Arrow types.

The lines ``trace --json`` prints (:mod:`ringtool.event.json_lines`) have, per event
type, the keys of :func:`ringtool.event.fields.fields_of` and values of each field
kind's JSON type (:data:`ringtool.event.fields.KIND_JSON`). :func:`line_schema` is the
Arrow schema of one type's lines, derived from that one table (a key's Arrow type is
its kind's, and an integer of a ``u64`` record column is ``uint64``), and
:func:`parse_lines` reads a batch of them with :func:`pyarrow.json.read_json` under
that schema: one C call for the batch, every value of a column of one type, a line
with a key the type does not have, a value of another JSON type, or text that is not
JSON refused (``ArrowInvalid`` for the whole batch: the caller finds the line).
"""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from ringtool.event.fields import Field, fields_of
from ringtool.event.layout import TraceLayout

#: Field kind -> the Arrow type of its values (integers: see :func:`_arrow_type`).
KIND_ARROW: dict[str, pa.DataType] = {
    "type": pa.string(), "str": pa.string(), "time": pa.float64(), "exit_code": pa.int64(),
    "syscall": pa.string(), "latency_us": pa.float64(), "argv": pa.list_(pa.string()),
    "truncated": pa.bool_(), "low32": pa.int64(), "high32": pa.int64(), "call": pa.string(),
    "addr": pa.string(), "proto": pa.string(), "direction": pa.string(), "ip": pa.string(),
    "flag": pa.bool_(), "tcp_states": pa.list_(pa.string()), "tcp_failed": pa.bool_(),
    "packet_comm": pa.string(), "blk_dev": pa.string(), "blk_disk": pa.string(),
    "blk_op": pa.string(), "blk_sync": pa.bool_(),
}  # fmt: skip


def record_dtype(layout: TraceLayout, type_name: str) -> np.dtype[np.void]:
    """The struct the records of ``type_name`` are (``struct trace_net`` for net, the
    type's own view for tcp and disk, else ``struct trace_event``)."""
    if type_name == "net":
        return layout.net
    return layout.views.get(layout.type_id(type_name), layout.event)


def column_dtype(dtype: np.dtype[np.void], name: str) -> np.dtype[np.generic]:
    """The dtype of record column ``name`` (``h.NAME``: the header's) of ``dtype``."""
    if name.startswith("h."):
        return dtype["h"][name[2:]]
    return dtype[name]


def _arrow_type(dtype: np.dtype[np.void], f: Field) -> pa.DataType:
    if f.kind == "int":
        return pa.uint64() if column_dtype(dtype, f.column) == np.dtype("<u8") else pa.int64()
    return KIND_ARROW[f.kind]


def line_schema(layout: TraceLayout, type_name: str) -> pa.Schema:
    """The Arrow schema of the JSON lines of ``type_name`` (see the module doc), a
    type of the layout (``layout.type_id`` raises KeyError otherwise)."""
    dtype = record_dtype(layout, type_name)
    return pa.schema([("type", pa.string()),
                      *((f.key, _arrow_type(dtype, f)) for f in fields_of(type_name))])  # fmt: skip


Check = Callable[[object], bool]


def _is(kind: type) -> Check:
    return lambda v: v is None or type(v) is kind


def _number(v: object) -> bool:
    return v is None or type(v) is float or type(v) is int


def _strings(v: object) -> bool:
    return v is None or (type(v) is list and all(x is None or type(x) is str for x in v))


def _ints(lo: int, hi: int) -> Check:
    return lambda v: v is None or (type(v) is int and lo <= v < hi)


def _check(arrow: pa.DataType) -> Check:
    if pa.types.is_boolean(arrow):
        return _is(bool)
    if pa.types.is_string(arrow):
        return _is(str)
    if pa.types.is_floating(arrow):
        return _number
    if pa.types.is_list(arrow):
        return _strings
    if pa.types.is_unsigned_integer(arrow):
        return _ints(0, 1 << 64)
    return _ints(-(1 << 63), 1 << 63)


def line_checks(schema: pa.Schema) -> dict[str, Check]:
    """Per key of ``schema``, whether a value (parsed by Python's JSON parser) reads as
    :func:`parse_lines` reads it: null, or of its key's type and range (the one-line
    check that spares a pyarrow call per line; pyarrow stays the judge of a batch)."""
    return {f.name: _check(f.type) for f in schema}


def line_fits(obj: dict[str, object], checks: dict[str, Check]) -> bool:
    """Whether every key of ``obj`` is one of ``checks`` and its value passes it."""
    return all(key in checks and checks[key](value) for key, value in obj.items())


def parse_lines(body: bytes, schema: pa.Schema) -> pa.Table:
    """The JSON lines of ``body`` (each ending in a newline) as a table of ``schema``:
    a missing key is null, an empty line no row (the caller checks the count).
    ``pyarrow.ArrowInvalid`` when a line is not a JSON object of ``schema``'s keys and
    types."""
    read = pj.ReadOptions(use_threads=False, block_size=max(len(body), 1 << 16))
    parse = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error",
                            newlines_in_values=False)  # fmt: skip
    return pj.read_json(io.BytesIO(body), read_options=read, parse_options=parse)


__all__ = ["KIND_ARROW", "Check", "column_dtype", "line_checks", "line_fits", "line_schema",
           "parse_lines", "record_dtype"]  # fmt: skip
