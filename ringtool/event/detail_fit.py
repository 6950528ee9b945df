"""An event's detail cut to the room a text output has, saying most in it: the one rule
of the ``--no-tui`` columns and the dashboard's events.

A detail is ``path + rest`` (:func:`ringtool.event.detail.detail_split`), both
already printable. :func:`fit_parts` keeps it whole when it fits; otherwise, for an
open (``flags_first``), it drops in this order until it fits:

1. the syscall's name at the end (`` (openat)``);
2. the open flags (the first word of ``rest``), by whole names (``O_RDONLY|O_CLOEXEC``
   becomes ``O_RDONLY|…``, at last ``…``), so the path stays whole as opensnoop
   prints it;
3. the start of the path, behind ``…`` (``…/__pycache__/x.cpython-311.pyc``: its file
   name, what tells two files apart, stays).

The mode and the result (``= -2 ENOENT``) are never cut. Any other detail keeps its
``rest`` and cuts the start of its path, and one without room for that is cut at its
end (:func:`cut`: its start says the most).
"""

from __future__ import annotations

import re

ELLIPSIS = "…"

#: The syscall's name that ends an open's detail (`` (openat)``).
_SYSCALL = re.compile(r" \(\w+\)$")
#: The flags that start an open's ``rest`` (`` O_RDONLY|O_CLOEXEC``; a bit without a name
#: is a hex number).
_FLAGS = re.compile(r"^ ((?:O_\w+|0x[0-9a-f]+)(?:\|(?:O_\w+|0x[0-9a-f]+))*)")


def cut(line: str, width: int | None) -> str:
    """``line`` cut to ``width`` characters (None: whole), ending in ``…`` when cut."""
    if width is None or len(line) <= width:
        return line
    return line[: width - 1] + ELLIPSIS if width > 0 else ""


def cut_flags(flags: str, room: int) -> str:
    """``O_A|O_B|O_C`` in ``room`` characters: whole, or the names that fit and ``…``
    (``O_RDONLY|…``), at least ``…`` (a name is never cut in its middle)."""
    if len(flags) <= room:
        return flags
    kept = ""
    for name in flags.split("|"):
        if len(kept) + len(name) + 2 > room:  # the name, its "|" and the "…"
            break
        kept += name + "|"
    return kept + ELLIPSIS


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, keeping its end behind ``…``."""
    if len(text) <= width:
        return text
    if width <= 0:
        return ""
    return ELLIPSIS + text[len(text) - width + 1 :]


#: How :func:`fit_parts` cuts a detail: ``(prefix, start, rest)`` gives
#: ``prefix + path[start:] + rest`` (the path whole, or its end behind ``…``, then the
#: rest, perhaps cut); a number ``w`` gives ``path + rest`` cut at its end to ``w``
#: (:func:`cut`).
Plan = tuple[str, int, str] | int


def plan(path_len: int, rest: str, width: int, flags_first: bool = False) -> Plan:
    """How a detail of a path of ``path_len`` characters and ``rest`` is cut to
    ``width`` (see the module doc); depends on the path's length alone, so a batch
    plans once per distinct ``(path_len, rest, width)``."""
    width = max(0, width)
    if path_len + len(rest) <= width:
        return ("", 0, rest)
    if flags_first:
        rest = _SYSCALL.sub("", rest)
        if path_len + len(rest) <= width:
            return ("", 0, rest)
        if m := _FLAGS.match(rest):
            tail = rest[m.end() :]
            rest = f" {cut_flags(m.group(1), width - path_len - len(tail) - 1)}{tail}"
    if path_len + len(rest) <= width:
        return ("", 0, rest)
    if path_len and len(rest) + 3 <= width:
        return (ELLIPSIS, path_len - (width - len(rest)) + 1, rest)  # as fit()
    return width


def apply(how: Plan, path: str, rest: str) -> str:
    """The detail ``path + rest`` cut as :func:`plan` said."""
    if isinstance(how, int):
        return cut(path + rest, how)
    prefix, start, new_rest = how
    return prefix + path[start:] + new_rest


def fit_parts(path: str, rest: str, width: int | None, flags_first: bool = False) -> str:
    """A printable detail ``path + rest`` in at most ``width`` characters (None: whole);
    ``flags_first``: an open's, whose flags are cut before its path (see the module
    doc)."""
    if width is None or len(path) + len(rest) <= width:
        return path + rest
    return apply(plan(len(path), rest, width, flags_first), path, rest)


__all__ = ["ELLIPSIS", "Plan", "apply", "cut", "cut_flags", "fit", "fit_parts", "plan"]
