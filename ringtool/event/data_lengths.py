"""How many bytes of each record's ``data`` are its strings (what a recording keeps:
docs/record.md, "Columns"), for :class:`ringtool.event.arrow_records.RecordSchema`.

The BPF programs store it where they know it (``struct trace_event``'s ``data_len``:
the ``_str`` helpers' length less its NUL; open's path, fork's child comm, 0 for a
record without a string; ``bpf/trace_event.h``). It is taken where it holds: the
row's type names a ``struct trace_event`` record, ``data_len < TRACE_DATA_LEN`` and
``data[data_len]`` is a NUL (one byte a row, gathered: a record another producer
made, with ``data_len`` 0 and a string, fails it). The other rows are found as the
records say (:func:`~ringtool.event.arrow_binary.nul_lengths`): an exec's up to the
NUL after its filename and its stored arguments (their count in ``aux2``), a mark's
and any other named type's up to its first NUL, a type this layout does not name up
to its last non-NUL byte. Rows of a type with a record struct of its own (tcp, disk:
no ``data``) and the packets are 0. Whole-column numpy operations, nothing per row
in Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ringtool.event.arrow_binary import byte_span, nul_lengths, row_starts
from ringtool.event.exec_data import ARGC_MASK, MAXARG, MISSING
from ringtool.event.layout import TraceLayout

Array = np.ndarray[Any, Any]

#: ``struct trace_event``'s member that holds ``data``'s length (not a column of a
#: recording: ``data``'s own length says it).
DATA_LEN = "data_len"
#: The member whose strings it measures.
DATA = "data"

#: A type's kind, for its rows' lengths: not named by the layout (up to the last
#: non-NUL byte), a C string (up to its first NUL), exec (filename and arguments), a
#: record struct of its own (no ``data``: 0).
_UNNAMED, _STRING, _EXEC, _OWN = 0, 1, 2, 3


class DataLengths:
    """Each row's kept bytes of ``data`` (see the module doc), for ``layout``."""

    def __init__(self, layout: TraceLayout) -> None:
        top = max(layout.type_names, default=0) + 1
        kinds = np.full(top + 1, _UNNAMED, np.int8)  # the last: every type above
        for type_id, name in layout.type_names.items():
            kinds[type_id] = _OWN if type_id in layout.views else _STRING
            if name == "exec":
                kinds[type_id] = _EXEC
        self._kinds = kinds
        #: by kind: whether its rows may take the stored length (a C string, exec)
        self._strings = np.array([k in (_STRING, _EXEC) for k in range(_OWN + 1)])
        self.stored = DATA_LEN in (layout.event.names or ())

    def kinds(self, types: Array) -> Array:
        """Each type's kind (int8; see :data:`_UNNAMED` ...)."""
        return self._kinds[np.minimum(types, len(self._kinds) - 1)]

    @staticmethod
    def own(kinds: Array) -> Array:
        """Which rows are of a type with a record struct of its own (tcp, disk)."""
        return kinds == _OWN  # type: ignore[no-any-return]

    def __call__(self, events: Array, kinds: Array, n: int) -> Array:
        """Per row of a batch of ``n`` whose first rows are ``events`` (their
        :meth:`kinds` given): the bytes kept of ``data`` (intp; 0 for the rest)."""
        lens = np.zeros(n, np.intp)
        ne = len(events)
        if not ne:
            return lens
        data = events[DATA]
        width = data.dtype.itemsize
        found = np.zeros(ne, bool)
        if self.stored:
            stored = events[DATA_LEN]
            # the byte at each stored length (clamped): one gather from the records
            span, stride = byte_span(data)
            at = row_starts(ne, stride) + np.minimum(stored, width - 1)
            found = self._strings[kinds] & (stored < width) & (span[at] == 0)
            lens[:ne] = np.where(found, stored, 0)
        rows = np.flatnonzero(~(found | (kinds == _OWN)))
        if len(rows):
            kind = kinds[rows]
            k = (kind != _UNNAMED).astype(np.intp)
            ex = kind == _EXEC
            if ex.any():
                aux2 = events["aux2"][rows[ex]].astype(np.int64)
                k[ex] = 1 + np.where(aux2 & MISSING, 0, np.minimum(aux2 & ARGC_MASK, MAXARG))
            lens[rows] = nul_lengths(data[rows], k)
        return lens


__all__ = ["DATA", "DATA_LEN", "DataLengths"]
