"""The members of a batch of records as contiguous arrays, each one copy, for
:class:`ringtool.event.arrow_records.RecordSchema`'s columns.

A record is 352 bytes and its fixed-width members are in its first 96: a pass a member
over a whole batch (16384 records, 5.5 MiB) reads each record's first lines again from
memory or a far cache, once a member. :class:`FieldGather` copies every member asked
for from :data:`CHUNK` records before the next ones: after the first member's pass,
the others read the same lines from the near cache. Whole-array numpy copies, a few
per chunk, nothing per record in Python.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]

#: Records whose members are copied before the next ones' (their first 128 bytes:
#: 512 KiB, within a core's L2 cache).
CHUNK = 4096


def member(rec: Array, path: tuple[str, ...]) -> Array:
    """The member at ``path`` (``("h", "pid")``) of the records ``rec``: a view."""
    for p in path:
        rec = rec[p]
    return rec


class FieldGather:
    """Copies the members at ``paths`` of a batch of records (see the module doc)."""

    def __init__(self, paths: list[tuple[str, ...]]) -> None:
        self.paths = paths

    def __call__(self, rec: Array) -> dict[tuple[str, ...], Array]:
        """Each member's values, contiguous (the same values as ``member(rec, path)``)."""
        n = len(rec)
        views = [member(rec, p) for p in self.paths]
        outs = [np.empty(v.shape, v.dtype) for v in views]
        for start in range(0, n, CHUNK):
            end = start + CHUNK
            for out, view in zip(outs, views, strict=True):
                out[start:end] = view[start:end]
        return dict(zip(self.paths, outs, strict=True))


__all__ = ["CHUNK", "FieldGather", "member"]
