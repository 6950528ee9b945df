"""The quantile of a bcc-style log2 latency histogram.

Slot ``s`` of such a histogram holds ``[2**(s-1), 2**s)`` ns (slot 0: below 1 ns).
:func:`percentile_from_log2` is for these slots what
:func:`ringtool.trace.reading.latency_buckets.quantile` is for the syscalls source's
log-linear buckets: it finds the bucket of the rank and interpolates linearly inside
it.
"""

from __future__ import annotations

from collections.abc import Mapping


def percentile_from_log2(hist: Mapping[int, int], q: float = 0.99) -> float:
    """The ``q`` quantile (ns) of a log2 histogram ``{slot: count}``; 0.0 if empty."""
    total = sum(hist.values())
    if total <= 0:
        return 0.0
    rank = q * total
    seen = 0.0
    for slot in sorted(hist):
        n = hist[slot]
        if n <= 0:
            continue
        if seen + n >= rank:
            low = float(1 << (slot - 1)) if slot >= 1 else 0.0
            high = float(1 << slot) if slot >= 1 else 1.0
            return low + (high - low) * max(0.0, rank - seen) / n
        seen += n
    return float(1 << max(hist))


__all__ = ["percentile_from_log2"]
