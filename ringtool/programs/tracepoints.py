"""Tracepoint field layouts, read from tracefs at load time, so one BPF source runs on
kernels whose tracepoint records differ.

A tracepoint's record layout is the kernel's, not ringtool's, and it changes between
kernels: ``sched_process_fork``'s ``child_comm`` is a fixed ``char child_comm[16]``
on 6.1 and a ``__data_loc char[] child_comm`` (a u32 ``offset | length << 16`` into the
record) on 6.18. A BPF program reads the two differently, so the choice is made from
the running kernel's ``events/<category>/<name>/format`` file and given to the C code
as a ``-D`` constant (no C is generated): a program's needs
(:class:`ringtool.kernel.needs.StringField`, given by the caller) name each string
field it reads whose layout varies and the macro that selects the code path (``1`` =
``__data_loc``, ``0`` = fixed ``char[N]`` array).

BCC builds the ``args`` struct of a ``TRACEPOINT_PROBE`` from the very same format
file, so the path the macro selects is the one whose member exists
(``data_loc_child_comm`` or ``child_comm``); a mismatch cannot compile.

:func:`parse_format` is pure (tested on the 6.1 and 6.18 texts);
:func:`layout_choices` reads tracefs; ``ringtool doctor`` prints each choice
(:meth:`LayoutChoice.describe`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ringtool.errors import KernelFeatureError
from ringtool.kernel.needs import StringField

#: Where tracefs is mounted, in the order tried.
TRACEFS_DIRS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))

_FIELD = re.compile(
    r"^\s*field:(?P<decl>[^;]+);\s*offset:(?P<offset>\d+);\s*size:(?P<size>\d+);"
    r"\s*signed:(?P<signed>[01]);"
)
_DECL = re.compile(r"^(?P<ctype>.*?)\s*\b(?P<name>\w+)\s*(?:\[(?P<dim>\w*)\])?$")


class TracepointFormatError(KernelFeatureError):
    """A tracepoint's format file is missing, unreadable, or lacks a field ringtool
    reads, or lays it out in a way ringtool does not know."""


@dataclass(frozen=True, slots=True)
class TpField:
    """One ``field:`` line of a format file."""

    name: str
    ctype: str  # "pid_t", "char", "const char *", "__data_loc char[]" (type, no name)
    offset: int
    size: int
    signed: bool
    array_len: int | None = None  # N of "char comm[16]"; None for scalars and data_loc

    @property
    def data_loc(self) -> bool:
        """``__data_loc``: a u32 (``offset | len << 16``) pointing into the record."""
        return self.ctype.startswith("__data_loc ")

    @property
    def rel_loc(self) -> bool:
        """``__rel_loc`` (5.19+): like data_loc, relative to the end of the field."""
        return self.ctype.startswith("__rel_loc ")


def parse_format(text: str) -> dict[str, TpField]:
    """The fields of a tracefs ``format`` text, common_* included, by name.

    Raises :class:`TracepointFormatError` for a text with no ``field:`` line or a
    field line it cannot read."""
    fields: dict[str, TpField] = {}
    for line in text.splitlines():
        if not line.strip().startswith("field:"):
            continue
        m = _FIELD.match(line)
        d = _DECL.match(" ".join(m["decl"].split())) if m else None
        if m is None or d is None:
            raise TracepointFormatError(f"cannot parse tracepoint format line {line.strip()!r}")
        dim = d["dim"]
        ctype = d["ctype"] + ("[]" if dim == "" else "")
        array_len = int(dim) if dim and dim.isdigit() else None
        fields[d["name"]] = TpField(
            name=d["name"], ctype=ctype, offset=int(m["offset"]), size=int(m["size"]),
            signed=m["signed"] == "1", array_len=array_len,
        )  # fmt: skip
    if not fields:
        raise TracepointFormatError("tracepoint format text has no field: lines")
    return fields


def read_format(category: str, event: str, tracefs: Iterable[Path] = TRACEFS_DIRS) -> str:
    """The text of ``events/<category>/<event>/format`` from the first tracefs that
    has it."""
    tried = []
    for root in tracefs:
        path = root / "events" / category / event / "format"
        try:
            return path.read_text()
        except OSError as exc:
            tried.append(f"{path}: {exc.strerror or exc}")
    raise TracepointFormatError(
        f"cannot read the format of tracepoint {category}:{event} ({'; '.join(tried)}): "
        "mount tracefs and run as root (`ringtool doctor`)"
    )


@dataclass(frozen=True, slots=True)
class LayoutChoice:
    """What :func:`choose` picked for one :class:`StringField`."""

    spec: StringField
    field: TpField
    value: int

    def describe(self) -> str:
        """One line: ``sched:sched_process_fork child_comm is char[16] at 28 ->
        -DTRACE_FORK_CHILD_COMM_DATA_LOC=0``."""
        f = self.field
        kind = f.ctype if f.data_loc else f"{f.ctype}[{f.array_len}]"
        return (f"{self.spec.category}:{self.spec.event} {f.name} is {kind} at {f.offset} "
                f"-> -D{self.spec.define}={self.value}")  # fmt: skip


def choose(spec: StringField, fields: Mapping[str, TpField], reader: str) -> LayoutChoice:
    """The code path for ``spec`` given its tracepoint's parsed ``fields``; ``reader``
    names the program that reads it (for the error)."""
    where = f"tracepoint {spec.category}:{spec.event}"
    f = fields.get(spec.field)
    if f is None:
        raise TracepointFormatError(
            f"{where} has no field {spec.field!r} (has: {', '.join(fields)}): this kernel "
            f"is not supported by {reader}"
        )
    if f.data_loc:
        return LayoutChoice(spec, f, 1)
    if f.ctype == "char" and f.array_len:
        return LayoutChoice(spec, f, 0)
    raise TracepointFormatError(
        f"{where} field {spec.field!r} is {f.ctype!r} (size {f.size}): neither "
        f"__data_loc char[] nor char[N]; {reader} cannot read it"
    )


def layout_choices(
    specs: Iterable[StringField], reader: str, tracefs: Iterable[Path] = TRACEFS_DIRS
) -> list[LayoutChoice]:
    """The choices for ``specs`` (a program's needs; ``reader`` names it for the
    errors), from the running kernel's format files."""
    roots = tuple(tracefs)
    return [
        choose(spec, parse_format(read_format(spec.category, spec.event, roots)), reader)
        for spec in specs
    ]


def layout_defines(choices: Iterable[LayoutChoice]) -> dict[str, int | str]:
    """The ``-D`` constants of ``choices``."""
    return {c.spec.define: c.value for c in choices}


__all__ = [
    "LayoutChoice",
    "TpField",
    "TracepointFormatError",
    "choose",
    "layout_choices",
    "layout_defines",
    "parse_format",
    "read_format",
]
