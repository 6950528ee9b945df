"""An event's detail cut to the room a text output has, saying most in it: the one rule
of the ``--no-tui`` columns and the dashboard's events.

A detail is ``path + rest`` (:func:`ringtool.event.detail.detail_split`), both
already printable. :func:`fit_parts` keeps it whole when it fits; otherwise, for an
open (``flags_first``), it drops in this order until it fits:

1. the syscall's name at the end (`` (openat)``);
2. the open flags (the first word of ``rest``: ``O_RDONLY|O_CLOEXEC`` becomes
   ``O_RDONLY|…``, at last ``…``), so the path stays whole as opensnoop prints it;
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
#: The least room in which cut flags still show a name's start (``O_RD…``).
_FLAG_ROOM = 5


def cut(line: str, width: int | None) -> str:
    """``line`` cut to ``width`` characters (None: whole), ending in ``…`` when cut."""
    if width is None or len(line) <= width:
        return line
    return line[: width - 1] + ELLIPSIS if width > 0 else ""


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, keeping its end behind ``…``."""
    if len(text) <= width:
        return text
    if width <= 0:
        return ""
    return ELLIPSIS + text[len(text) - width + 1 :]


def fit_parts(path: str, rest: str, width: int | None, flags_first: bool = False) -> str:
    """A printable detail ``path + rest`` in at most ``width`` characters (None: whole);
    ``flags_first``: an open's, whose flags are cut before its path (see the module
    doc)."""
    if width is None or len(path) + len(rest) <= width:
        return path + rest
    if flags_first:
        rest = _SYSCALL.sub("", rest)
        if len(path) + len(rest) <= width:
            return path + rest
        if m := _FLAGS.match(rest):
            flags, tail = m.group(1), rest[m.end() :]
            room = width - len(path) - len(tail) - 1
            if room >= _FLAG_ROOM:
                return f"{path} {cut(flags, room)}{tail}"
            rest = f" {ELLIPSIS}{tail}"
    if path and len(rest) + 3 <= width:
        return fit(path, width - len(rest)) + rest
    return cut(path + rest, width)


__all__ = ["ELLIPSIS", "cut", "fit", "fit_parts"]
