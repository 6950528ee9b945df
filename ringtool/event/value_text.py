"""Values as the human outputs (``--no-tui`` columns, ``--fields`` columns, the
dashboard's events) write them; JSON and CSV carry the plain numbers.

* a syscall's result: ``3``, or for an error ``-2 ENOENT`` (:func:`result_text`: the
  number, then its :mod:`errno` name; -4095..-1 are errors, as the kernel's
  ``IS_ERR_VALUE``);
* a time: ``HH:MM:SS.mmm`` local time with milliseconds, or with ``dates``
  ``YYYY-MM-DD HH:MM:SS.mmm`` (:func:`clock_texts`; the milliseconds are cut, never
  rounded up into the next second);
* a ``--fields`` cell (:func:`field_text`): an open's ``flags`` by name
  (:func:`ringtool.event.open_flags.flag_text`), ``mode`` in octal, ``ret`` as above.
"""

from __future__ import annotations

import errno
import time
from typing import Any

import numpy as np

from ringtool.event.open_flags import flag_text

#: The lowest error result (the kernel's MAX_ERRNO, include/linux/err.h).
MAX_ERRNO = 4095
#: Seconds a batch's timestamps may span to have their clocks formatted without a sort.
CLOCK_SPAN = 64
CLOCK_WIDTH = 12
DATE_CLOCK_WIDTH = 23


def result_text(ret: int) -> str:
    """``ret`` as a number, an error also by name: ``-2 ENOENT`` (a number without a
    name stays a number)."""
    if -MAX_ERRNO <= ret < 0 and (name := errno.errorcode.get(-ret)):
        return f"{ret} {name}"
    return str(ret)


def clock_width(dates: bool) -> int:
    """The width of :func:`clock_texts`' texts."""
    return DATE_CLOCK_WIDTH if dates else CLOCK_WIDTH


def _second(seconds: float, dates: bool) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S" if dates else "%H:%M:%S", time.localtime(seconds))


#: ``.000 `` to ``.999 ``: the milliseconds' texts, one lookup per record.
_MILLIS = np.array([f".{ms:03d}" for ms in range(1000)], dtype=object)


def clock_parts(seconds: np.ndarray[Any, Any], dates: bool = False) -> tuple[list[str], list[str]]:
    """The two parts of :func:`clock_texts`: the second (``12:00:01``) and the
    milliseconds (``.250``) of each timestamp, so that a batch's lines are built without
    a string made per record (:mod:`ringtool.event.line_pieces`)."""
    if len(seconds) == 0:
        return [], []
    whole = np.floor(seconds)
    millis = np.minimum(((seconds - whole) * 1000).astype(np.intp), 999)
    lo, hi = float(whole.min()), float(whole.max())
    if hi - lo <= CLOCK_SPAN:
        labels = [_second(lo + i, dates) for i in range(int(hi - lo) + 1)]
        index = (whole - lo).astype(np.intp)
    else:
        uniq, inverse = np.unique(whole, return_inverse=True)
        labels = [_second(s, dates) for s in uniq.tolist()]
        index = inverse.reshape(-1)
    shown: list[str] = np.array(labels, dtype=object)[index].tolist()
    return shown, _MILLIS[millis].tolist()


def clock_texts(seconds: np.ndarray[Any, Any], dates: bool = False) -> list[str]:
    """The local time of each float timestamp with milliseconds (see the module doc);
    each distinct second is formatted once (a batch spans a few seconds at most: indexed
    by the second's offset from the first, with no sort)."""
    shown, millis = clock_parts(seconds, dates)
    return list(map(str.__add__, shown, millis))


def clock_text(seconds: float, dates: bool = False) -> str:
    """:func:`clock_texts` of one timestamp."""
    return clock_texts(np.array([seconds], dtype=np.float64), dates)[0]


def field_text(key: str, value: Any) -> str:
    """A ``--fields`` column's cell for ``value`` of field ``key`` (see the module doc);
    other values as ``str``. Not yet printable: the caller escapes it."""
    if isinstance(value, bool) or not isinstance(value, int):
        return str(value)
    if key == "flags":
        return flag_text(value)
    if key == "mode":
        return f"{value:04o}"
    if key == "ret":
        return result_text(value)
    return str(value)


__all__ = [
    "CLOCK_SPAN", "CLOCK_WIDTH", "DATE_CLOCK_WIDTH", "MAX_ERRNO", "clock_parts", "clock_text",
    "clock_texts",
    "clock_width", "field_text", "result_text",
]  # fmt: skip
