"""Log-linear latency buckets: the syscalls and disk sources' histograms, and quantiles
with a stated, bounded error.

Like HdrHistogram and bpftrace's ``hist``/``lhist`` combined, every power of two of
nanoseconds is split into :data:`SUB` equal linear sub-buckets (bpf/trace_lat.h, for
bpf/trace_syscalls.c and bpf/trace_disk.c, computes the index with ``bpf_log2l``, a
shift and a mask: no loop, no float):

* ``v < SUB``: index ``v`` (exact, width 1);
* else, with ``m = floor(log2 v)`` (``>= SUB_BITS``):
  ``index = (m - SUB_BITS + 1) * SUB + ((v >> (m - SUB_BITS)) & (SUB - 1))``,
  the bucket ``[(SUB + sub) << e, (SUB + sub + 1) << e)`` with ``e = m - SUB_BITS``.

A bucket never crosses a power of two and is at most ``1/SUB`` of its low end wide.
:func:`quantile` returns the middle of the bucket that holds the requested rank; the
true quantile of the recorded latencies lies in that bucket, so the estimate is
within :data:`MAX_ERROR` (``1/(2*SUB)``, 1.6%) of it. Printed figures are rounded to
:data:`DIGITS` significant digits (:func:`approx`, :func:`approx_duration`), which
adds at most 5%: what ringtool prints is within 6.7% of the true value (the 10%
promised in docs/), and shows no digit the histogram cannot back.

Where the kernel counts them: an array indexed ``nr * FAST_BUCKETS + index``
(``sys_lat``) for :data:`FAST_NRS` syscall numbers and the first :data:`FAST_BUCKETS`
indexes, else a hash keyed ``nr << KEY_BITS | index`` (``sys_hist``), with the tgid in
the high 32 bits for ``proc_hist``; :data:`INDEXES` indexes cover every u64.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

#: log2 of the linear sub-buckets per power of two (bpf: TRACE_LAT_SUB_BITS)
SUB_BITS = 5
SUB = 1 << SUB_BITS
#: bits of the index in a map key (bpf: TRACE_LAT_KEY_BITS)
KEY_BITS = 11
#: number of indexes a u64 latency can have: up to floor(log2) = 63
INDEXES = (64 - SUB_BITS + 1) * SUB
#: syscall numbers below this count in the kernel's array (bpf: TRACE_LAT_NRS) ...
FAST_NRS = 512
#: ... as do indexes below this one (latencies under 2**36 ns, about 69 s;
#: bpf: TRACE_LAT_FAST_BUCKETS); the rest go to the hash
FAST_BUCKETS = 1024
#: the largest relative error of :func:`quantile` against the true quantile
MAX_ERROR = 1 / (2 * SUB)
#: significant digits of printed latency figures
DIGITS = 2

assert INDEXES <= 1 << KEY_BITS


def bucket_of(ns: int) -> int:
    """The index of latency ``ns`` (>= 0), as bpf/trace_syscalls.c computes it."""
    if ns < SUB:
        return ns
    m = ns.bit_length() - 1
    return ((m - SUB_BITS + 1) << SUB_BITS) | ((ns >> (m - SUB_BITS)) & (SUB - 1))


def bucket_indexes(ns: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """:func:`bucket_of` of every latency of an array (>= 0, below 2**53: exact in a
    float64), vectorised: int64 indexes."""
    v = np.asarray(ns, dtype=np.int64)
    m = np.frexp(v.astype(np.float64))[1].astype(np.int64) - 1  # floor(log2 v); v >= 1
    e = np.maximum(m - SUB_BITS, 0)
    fine = ((m - SUB_BITS + 1) << SUB_BITS) | ((v >> e) & (SUB - 1))
    return np.where(v < SUB, v, fine)


def bucket_range(index: int) -> tuple[int, int]:
    """The inclusive ``(low, high)`` ns of bucket ``index``."""
    if index < SUB:
        return index, index
    e = (index >> SUB_BITS) - 1
    low = (SUB + (index & (SUB - 1))) << e
    return low, low + (1 << e) - 1


def middle(index: int) -> float:
    """The bucket's representative: the middle of its range."""
    low, high = bucket_range(index)
    return (low + high) / 2


def quantile(hist: Mapping[int, int], q: float = 0.99) -> float:
    """The ``q`` quantile (ns) of ``{index: count}``: the middle of the bucket holding
    the sample of rank ``ceil(q * total)`` (within :data:`MAX_ERROR` of it); 0.0 if
    empty."""
    total = sum(n for n in hist.values() if n > 0)
    if total <= 0:
        return 0.0
    rank = max(1, math.ceil(q * total))
    seen = 0
    for index in sorted(hist):
        n = hist[index]
        if n <= 0:
            continue
        seen += n
        if seen >= rank:
            return middle(index)
    return middle(max(hist))


def to_log2(hist: Mapping[int, int]) -> dict[int, int]:
    """``{index: count}`` merged into bcc's log2 slots (``bpf_log2l``: slot ``s``
    holds ``[2**(s-1), 2**s)``; a fine bucket lies in one slot), for ``--hist`` rows
    and sparklines."""
    out: dict[int, int] = {}
    for index, n in hist.items():
        if n > 0:
            slot = bucket_range(index)[0].bit_length()
            out[slot] = out.get(slot, 0) + n
    return out


def approx(value: float, digits: int = DIGITS) -> float:
    """``value`` rounded to ``digits`` significant digits (0 stays 0)."""
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


_UNITS = ((1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns"))


def approx_duration(ns: float) -> str:
    """A latency figure in at most 6 characters with :data:`DIGITS` significant digits
    (``300ms``, ``21ms``, ``2.1ms``, ``850ns``; ``-`` if not finite)."""
    if not math.isfinite(ns) or ns < 0:
        return "-"
    v = approx(ns)
    for div, unit in _UNITS:
        if v >= div or div == 1.0:
            x = approx(v / div)
            if x >= 1000:  # 1000 s and more
                return f"{approx(x / 1000):g}k{unit}"
            return f"{x:.0f}{unit}" if x >= 10 or div == 1.0 else f"{x:.1f}{unit}"
    return "-"  # pragma: no cover  (the loop always returns)


__all__ = [
    "DIGITS", "INDEXES", "KEY_BITS", "MAX_ERROR", "SUB", "SUB_BITS", "approx",
    "approx_duration", "bucket_of", "bucket_range", "middle", "quantile", "to_log2",
]  # fmt: skip
