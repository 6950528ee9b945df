"""The pieces a read of the rings is handed on in: views where they pay off.

A read gives one array per ring run (:meth:`TraceSession.lease_events`): most are views
of the mapped rings, which the outputs format and count without copying a record (a
copy of every record was about half of what draining cost). But every batch has a
fixed cost in the outputs (a write, a stats update, a dashboard pass), so small arrays,
many CPUs' few records each, are joined into one copy instead: a run of consecutive
arrays under :data:`MIN_VIEW` records becomes one array. Order is kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

#: arrays of at least this many records are handed on as they are (views)
MIN_VIEW = 512

Records = np.ndarray[Any, Any]


def pieces(arrays: list[Records], min_view: int = MIN_VIEW) -> Iterator[Records]:
    """``arrays`` in order, each run of consecutive ones shorter than ``min_view``
    joined into one; empty arrays are left out."""
    small: list[Records] = []
    for arr in arrays:
        if not len(arr):
            continue
        if len(arr) < min_view:
            small.append(arr)
            continue
        if small:
            yield _joined(small)
            small = []
        yield arr
    if small:
        yield _joined(small)


def _joined(arrays: list[Records]) -> Records:
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


__all__ = ["MIN_VIEW", "pieces"]
