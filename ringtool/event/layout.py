"""The trace event layout, read from its single definition: ``bpf/trace_event.h``.

The C header is the only place the records are declared. :func:`parse_layout` reads
its ``#define TRACE_*`` integer constants and ``struct trace_*`` declarations and
builds numpy dtypes with C's natural alignment (``align=True``), so Python decodes
exactly what the BPF programs write. :meth:`TraceLayout.size_defines` gives the sizes
back to the compiler (``-DTRACE_EVENT_SIZE=...``): the header's ``_Static_assert`` s
refuse to compile a program whose structs differ from what Python computed.

Supported declarations (what the header promises to stay within): one field per line,
``u8``/``u16``/``u32``/``u64``/``s8``/``s16``/``s32``/``s64``/``char`` or a previously
declared ``struct trace_*``, optionally ``[N]`` with N a number or a ``TRACE_*``
constant. ``char[N]`` decodes as a NUL-stripped bytes string (numpy ``S<N>``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ringtool.bpf_files import bpf_dir, require_bpf_dir
from ringtool.event.registry import EVENT_RECORD, EVENT_TYPES, NET_RECORD, TYPE_PREFIX

TRACE_HEADER = bpf_dir() / "trace_event.h"

_SCALARS = {
    "u8": "<u1",
    "u16": "<u2",
    "u32": "<u4",
    "u64": "<u8",
    "s8": "<i1",
    "s16": "<i2",
    "s32": "<i4",
    "s64": "<i8",
}
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_DEFINE = re.compile(r"^\s*#define\s+(TRACE_\w+)\s+(0x[0-9a-fA-F]+|\d+)\s*$", re.M)
_STRUCT = re.compile(r"\bstruct\s+(trace_\w+)\s*\{(.*?)\}\s*;", re.S)
_FIELD = re.compile(r"^(struct\s+\w+|\w+)\s+(\w+)\s*(?:\[\s*(\w+)\s*\])?$")

#: Event type constant name -> the ``type`` string used in output (TRACE_EXEC -> exec):
#: the constants of :data:`ringtool.event.registry.EVENT_TYPES`.
TYPE_CONSTANTS = tuple(t.constant for t in EVENT_TYPES)
#: RINGBUF event types whose records are a struct of their own (of a ``struct
#: trace_event``'s size: the rings' records all are): type constant -> struct name
#: (:attr:`ringtool.event.registry.EventType.record`). Not net: its ``struct
#: trace_net`` is a perf sample's header (:class:`ringtool.event.records.NetRecords`).
RECORD_STRUCTS = {
    t.constant: t.record for t in EVENT_TYPES if t.record not in (EVENT_RECORD, NET_RECORD)
}
#: The field that fills such a struct up to the size (nothing after it is data).
RECORD_PAD = "pad"
#: Prefix of the constants that name an open or exec event's syscall (``call``).
CALL_PREFIX = "TRACE_CALL_"


class LayoutError(ValueError):
    """The header has a declaration this parser does not understand."""


@dataclass(frozen=True)
class TraceLayout:
    """Constants and dtypes parsed from the header (see the module doc)."""

    constants: dict[str, int]
    dtypes: dict[str, np.dtype[Any]]
    type_names: dict[int, str] = field(default_factory=dict)
    #: ``TRACE_CALL_*`` value -> the syscall's name (TRACE_CALL_OPENAT -> openat)
    call_names: dict[int, str] = field(default_factory=dict)
    #: type value -> the dtype its records are viewed as (:data:`RECORD_STRUCTS`)
    views: dict[int, np.dtype[Any]] = field(default_factory=dict)

    @property
    def event(self) -> np.dtype[Any]:
        """dtype of ``struct trace_event`` (exec/exit/fork/open/syscall records)."""
        return self.dtypes[EVENT_RECORD]

    @property
    def net(self) -> np.dtype[Any]:
        """dtype of ``struct trace_net`` (net sample header; packet bytes follow)."""
        return self.dtypes[NET_RECORD]

    @property
    def net_ts_offset(self) -> int:
        """Where ``h.ts`` is in a ``struct trace_net``: a raw net sample's stamp (u64)."""
        net, hdr = self.net.fields, self.dtypes["trace_hdr"].fields
        if net is None or hdr is None:  # parse_layout makes structured dtypes only
            raise LayoutError("struct trace_net or struct trace_hdr has no fields")
        return int(net["h"][1]) + int(hdr["ts"][1])

    def type_id(self, name: str) -> int:
        """``"exec"`` -> the value of TRACE_EXEC."""
        return self.constants[TYPE_PREFIX + name.upper()]

    def data_kept(self, type_name: str) -> int | None:
        """For a type with a record struct of its own (:data:`RECORD_STRUCTS`): how many
        bytes from ``struct trace_event``'s ``data`` on its fields use (up to its
        ``pad``); None for the others. What a consumer that keeps only the start of
        ``data`` (a C string) must keep of such a record."""
        view = self.views.get(self.type_id(type_name)) if type_name in self.names else None
        if view is None or view.fields is None or self.event.fields is None:
            return None
        return int(view.fields[RECORD_PAD][1]) - int(self.event.fields["data"][1])

    @property
    def names(self) -> frozenset[str]:
        """The names of the event types (``exec``, ..., ``tcp``)."""
        return frozenset(self.type_names.values())

    def size_defines(self) -> dict[str, int]:
        """``-D`` values that make the header's _Static_asserts check the sizes."""
        return {"TRACE_EVENT_SIZE": self.event.itemsize, "TRACE_NET_SIZE": self.net.itemsize}


def _dim(token: str, constants: dict[str, int]) -> int:
    if token.isdigit():
        return int(token)
    if token in constants:
        return constants[token]
    raise LayoutError(f"array size {token!r} is neither a number nor a TRACE_* constant")


def _field_dtype(
    ctype: str, dim: str | None, constants: dict[str, int], structs: dict[str, np.dtype[Any]]
) -> Any:
    n = _dim(dim, constants) if dim else None
    if ctype == "char":
        if n is None:
            return "<i1"
        return f"S{n}"
    if ctype.startswith("struct"):
        name = ctype.split()[1]
        if name not in structs:
            raise LayoutError(f"struct {name} is used before it is declared")
        base: Any = structs[name]
    elif ctype in _SCALARS:
        base = _SCALARS[ctype]
    else:
        raise LayoutError(f"unsupported field type {ctype!r}")
    return base if n is None else (base, (n,))


def parse_layout(text: str) -> TraceLayout:
    """Parse the header text into a :class:`TraceLayout` (pure: no file access)."""
    body = _COMMENT.sub("", text)
    constants = {m[1]: int(m[2], 0) for m in _DEFINE.finditer(body)}
    structs: dict[str, np.dtype[Any]] = {}
    for m in _STRUCT.finditer(body):
        fields = []
        for raw in m[2].split(";"):
            decl = " ".join(raw.split())
            if not decl:
                continue
            fm = _FIELD.match(decl)
            if fm is None:
                raise LayoutError(f"struct {m[1]}: cannot parse field {decl!r}")
            fields.append((fm[2], _field_dtype(fm[1], fm[3], constants, structs)))
        structs[m[1]] = np.dtype(fields, align=True)
    for needed in ("trace_hdr", EVENT_RECORD, NET_RECORD):
        if needed not in structs:
            raise LayoutError(f"the header declares no struct {needed}")
    type_names = {
        constants[c]: c[len(TYPE_PREFIX) :].lower() for c in TYPE_CONSTANTS if c in constants
    }
    call_names = {
        v: k[len(CALL_PREFIX) :].lower() for k, v in constants.items() if k.startswith(CALL_PREFIX)
    }
    views = {}
    for const, name in RECORD_STRUCTS.items():
        if const not in constants or name not in structs:
            continue
        view = structs[name]
        if view.itemsize != structs[EVENT_RECORD].itemsize or RECORD_PAD not in (view.fields or {}):
            raise LayoutError(f"struct {name} must end in `{RECORD_PAD}` up to the size of struct "
                              "trace_event (a RINGBUF record)")  # fmt: skip
        views[constants[const]] = view
    return TraceLayout(constants=constants, dtypes=structs, type_names=type_names,
                       call_names=call_names, views=views)  # fmt: skip


def load_layout(path: Path = TRACE_HEADER) -> TraceLayout:
    """Parse ``bpf/trace_event.h`` (or ``path``); when that header is missing from the
    installation, a :class:`~ringtool.bpf_files.BpfSourcesMissing` saying so."""
    if path == TRACE_HEADER:
        require_bpf_dir()
    return parse_layout(path.read_text())


__all__ = [
    "RECORD_PAD",
    "RECORD_STRUCTS",
    "TRACE_HEADER",
    "LayoutError",
    "TraceLayout",
    "load_layout",
    "parse_layout",
]
