"""Histograms for tests written as bcc's log2 slots, in the syscalls source's buckets."""

from __future__ import annotations

from collections.abc import Mapping

from ringtool.trace.reading.latency_buckets import bucket_of


def from_log2(slots: Mapping[int, int]) -> dict[int, int]:
    """``{log2 slot: count}`` as ``{bucket: count}``: each slot's count in the fine
    bucket of its low end (``2**(s-1)`` ns; slot 0: 0 ns)."""
    return {bucket_of((1 << s) >> 1): n for s, n in slots.items()}
