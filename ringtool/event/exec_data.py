"""The ``data`` of an exec record: the filename, then the arguments (bpf/trace_exec.c).

``data`` holds NUL-terminated strings: the filename the kernel executed, then
``argv[0]``, ``argv[1]``, ... as the process passed them, all within the field
(``TRACE_DATA_LEN`` bytes, at most ``TRACE_MAXARG`` arguments). ``aux2`` is the
number of arguments stored (``TRACE_ARGC_MASK``) with two flags, all defined in
``bpf/trace_event.h`` and read from there (:mod:`ringtool.event.layout`):

* ``TRACE_ARGS_TRUNCATED``: the process passed more, or the last one stored is cut;
* ``TRACE_ARGS_MISSING``: argv was not read (the exec began before tracing did, or
  the in-flight table was full); :func:`argv` is then ``None``.

Arguments are bytes as the process gave them: decode them like every string field
(:func:`ringtool.event.decode.cstr`) and show them on a terminal only through
:func:`ringtool.event.safe_text.printable`.
"""

from __future__ import annotations

from ringtool.event.layout import load_layout

_C = load_layout().constants
TRUNCATED: int = _C["TRACE_ARGS_TRUNCATED"]
MISSING: int = _C["TRACE_ARGS_MISSING"]
ARGC_MASK: int = _C["TRACE_ARGC_MASK"]
MAXARG: int = _C["TRACE_MAXARG"]


def stored_count(aux2: int) -> int:
    """How many arguments the record holds (0 when argv is missing)."""
    return 0 if aux2 & MISSING else min(aux2 & ARGC_MASK, MAXARG)


def argv(data: bytes, aux2: int) -> list[bytes] | None:
    """The stored arguments of an exec record, or ``None`` when argv was not read.

    ``data`` may be the field with its trailing NULs removed (numpy's ``S`` columns
    drop them): arguments that are missing at the end were empty strings."""
    if aux2 & MISSING:
        return None
    n = stored_count(aux2)
    parts = data.split(b"\0")[1 : 1 + n]
    return parts + [b""] * (n - len(parts))


def truncated(aux2: int) -> bool:
    """Whether the process passed more than the record holds."""
    return bool(aux2 & TRUNCATED)


def used_len(data: bytes, aux2: int) -> int:
    """Bytes of ``data`` that the filename and the stored arguments take, with their
    NULs (what must survive when a record is cut short; the rest is stale)."""
    pos = -1
    for _ in range(1 + stored_count(aux2)):
        pos = data.find(b"\0", pos + 1)
        if pos < 0:
            return len(data)
    return pos + 1


__all__ = ["ARGC_MASK", "MAXARG", "MISSING", "TRUNCATED", "argv", "stored_count",
           "truncated", "used_len"]  # fmt: skip
