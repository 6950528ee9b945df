"""The syscall an open or exec event came from: the record's ``call`` (a
``TRACE_CALL_*`` constant of ``bpf/trace_event.h``) as the syscall's name
(``openat``, ``creat``, ``execveat``, ...).

The numbers are ringtool's own, read from the header (:mod:`ringtool.event.layout`),
not the architecture's syscall numbers. 0 (another event type, or an exec whose
entry was not seen) is ``None``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ringtool.event.layout import load_layout

#: ``TRACE_CALL_*`` value -> name.
NAMES: dict[int, str] = load_layout().call_names


#: Name by value, one past the largest known value: ``None`` (what an unknown value gets).
_TABLE = np.array([NAMES.get(v) for v in range(max(NAMES, default=-1) + 2)], dtype=object)


def call_names(col: np.ndarray[Any, Any]) -> list[str | None]:
    """The name of every value of a ``call`` column (an unsigned column: one table
    lookup per value, values past the known ones clipped to the ``None`` entry)."""
    if len(col) == 0:
        return []
    if col.dtype.kind == "u":
        return _TABLE[np.minimum(col, len(_TABLE) - 1)].tolist()  # type: ignore[no-any-return]
    uniq, inverse = np.unique(col, return_inverse=True)
    names = np.array([NAMES.get(v) for v in uniq.tolist()], dtype=object)
    return names[inverse.reshape(-1)].tolist()  # type: ignore[no-any-return]


__all__ = ["NAMES", "call_names"]
