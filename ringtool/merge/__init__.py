"""Reading K per-CPU buffers as one stream in timestamp order.

    from ringtool.merge import ListSource, merge_sources
    m = merge_sources([ListSource(buf0), ListSource(buf1)], algorithm="optimized")
    for ts, payload in m:          # what is available now, in order
        ...
    m.stats.out_of_order           # events delivered older than the one before

Sources are anything with ``peek()``/``pop()`` of ``(timestamp, payload)`` events
(:class:`Source`); adapters: :class:`ListSource`, :class:`DequeSource`,
:class:`FetchSource` (a consuming ``fetch(limit)``), :class:`RingSource` /
:func:`ring_source` (a ringtool reader ring plus a timestamp extractor such as
:func:`u64_at`: it commits only what the merge took; ``merger.close()`` or dropping the
merger gives the rest back to the ring). The algorithms and the out-of-order
cases each accepts are documented in :mod:`ringtool.merge.algorithms`; the reorder
window in :mod:`ringtool.merge.window`. Pure Python: no syscalls.

Layer: merge | protocol | kernel | bpf_files (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from ringtool.errors import ArgumentError
from ringtool.merge.algorithms import (
    ALGORITHMS,
    Algorithm,
    DefaultMerge,
    Merger,
    MergeStats,
    OptimizedMerge,
)
from ringtool.merge.source import (
    DequeSource,
    FetchSource,
    ListSource,
    ReaderRing,
    RingSource,
    Source,
    ring_source,
    u64_at,
)
from ringtool.merge.window import ReorderWindow

T = TypeVar("T")

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "DefaultMerge",
    "DequeSource",
    "FetchSource",
    "ListSource",
    "MergeStats",
    "Merger",
    "OptimizedMerge",
    "ReaderRing",
    "ReorderWindow",
    "RingSource",
    "Source",
    "merge_sources",
    "ring_source",
    "u64_at",
]


def merge_sources(
    sources: Sequence[Source[T]],
    *,
    algorithm: Algorithm = "optimized",
    window_us: float | None = None,
) -> Merger[T]:
    """A merger over ``sources`` (buffer id = index in the sequence).

    ``algorithm`` is ``"default"`` or ``"optimized"`` (same output when all data is
    present; see :mod:`ringtool.merge.algorithms`). With ``window_us`` the result is a
    :class:`ReorderWindow` holding events up to that many µs of event time.
    """
    try:
        cls = ALGORITHMS[algorithm]
    except (KeyError, TypeError):
        raise ArgumentError(
            f"unknown merge algorithm {algorithm!r}: choose one of {sorted(ALGORITHMS)}"
        ) from None
    merger: Merger[T] = cls(sources)
    if window_us is not None:
        return ReorderWindow(merger, window_us)
    return merger
