"""The quantile of a bcc-style log2 latency histogram.

Slot ``s`` of such a histogram holds ``[2**(s-1), 2**s)`` ns (slot 0: below 1 ns).
:func:`percentile_from_log2` is for these slots what
:func:`ringtool.trace.reading.latency_buckets.quantile` is for the syscalls source's
log-linear buckets: it finds the bucket of the rank and interpolates linearly inside
it. :func:`format_log2` prints such a histogram as bcc's ``print_log2_hist`` does
(:mod:`ringtool.trace.report.hist` for the syscalls' histograms, and
:mod:`ringtool.trace.report.cpuwait`).
"""

from __future__ import annotations

from collections.abc import Mapping

#: Width of the ``distribution`` bar (bcc's is 40).
BAR = 40


def slot_range(slot: int) -> tuple[int, int]:
    """The inclusive ``(low, high)`` ns of a log2 slot, as bcc prints it."""
    low, high = (1 << slot) >> 1, (1 << slot) - 1
    if low == high:
        low -= 1
    return max(low, 0), max(high, 0)


def format_log2(buckets: Mapping[int, int], unit: str = "nsecs") -> list[str]:
    """bcc's ``print_log2_hist`` for ``{slot: count}`` (with its leading empty rows
    stripped): every slot from the lowest to the highest one used,
    ``low -> high : count |*****  |``; empty: no lines."""
    used = [max(s, 1) for s, n in buckets.items() if n > 0]
    if not used:
        return []
    top = max(used)
    peak = max(buckets.values())
    high_w = len(str(slot_range(top)[1]))
    lines = [f"{unit:>{2 * high_w + 4}} : {'count':<9} distribution"]
    for slot in range(min(used), top + 1):
        n = buckets.get(slot, 0) + (buckets.get(0, 0) if slot == 1 else 0)  # 0 ns: 0 -> 1
        low, high = slot_range(slot)
        stars = "*" * (n * BAR // peak) if peak else ""
        lines.append(f"{low:>{high_w}} -> {high:<{high_w}} : {n:<9} |{stars:<{BAR}}|")
    return lines


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


__all__ = ["BAR", "format_log2", "percentile_from_log2", "slot_range"]
