"""Numbers for a fixed-width cell: scaled to a unit instead of cut.

:func:`count` writes counts and rates in at most 5 characters (``9999``, ``10.8k``,
``999k``, ``8.53M``... with k, M, G, T, P, E = 10**3 ... 10**18); :func:`duration_ns`
writes a duration in at most 6 characters (``850ns``, ``12.3µs``, ``999ms``, ``1.50s``,
then ``1.23ks``...). Both round to the shown precision, and a value that would
round up to the next unit's range is shown in that unit (``99.96k`` is ``100k``), so the
width bound holds for every finite input. Negative values get a ``-`` in front; NaN
and infinities are shown as ``-``. :func:`size_text` writes a byte count as KiB/MiB/GiB.
"""

from __future__ import annotations

import math

_PREFIXES = "kMGTPE"
_TIME_UNITS = ((1e3, "µs"), (1e6, "ms"), (1e9, "s"))


def _scaled(v: float, unit: str) -> str | None:
    """``v`` in at most 4 characters plus ``unit`` (3 significant digits), or None
    when it does not fit below 1000."""
    if round(v, 2) < 10:
        return f"{v:.2f}{unit}"
    if round(v, 1) < 100:
        return f"{v:.1f}{unit}"
    if round(v) < 1000:
        return f"{v:.0f}{unit}"
    return None


def count(n: float) -> str:
    """A count or rate, exact below 10,000, else 3 significant digits and a prefix."""
    if not math.isfinite(n):
        return "-"
    if n < 0:
        return "-" + count(-n)
    if round(n) < 10_000:
        return f"{n:.0f}"
    v = float(n)
    for prefix in _PREFIXES:
        v /= 1000
        text = _scaled(v, prefix)
        if text is not None:
            return text
    return f"{v:.0f}{_PREFIXES[-1]}"


def duration_ns(ns: float) -> str:
    """A duration given in ns, in the largest unit of ns, µs, ms, s that keeps it
    at or above 1 (3 significant digits)."""
    if not math.isfinite(ns):
        return "-"
    if ns < 0:
        return "-" + duration_ns(-ns)
    if round(ns) < 1000:
        return f"{ns:.0f}ns"
    for div, unit in _TIME_UNITS:
        text = _scaled(ns / div, unit)
        if text is not None:
            return text
    return count(ns / 1e9) + "s"  # 1000 s and more: ks, Ms, ...


def size_text(n: int) -> str:
    """Bytes as KiB/MiB/GiB (exact for the powers of two rings have)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n} B"


__all__ = ["count", "duration_ns", "size_text"]
