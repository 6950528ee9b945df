"""When a trace ring grows or shrinks: the policy alone (pure: no syscalls, the time
is passed in).

At each check the policy sees, per buffer (one per CPU), its ring's size, the highest
fill seen since the last check (0..1, sampled before each read), the events dropped
since the last check and whether a switch of it is in flight (then it is left alone).

* **Grow** a buffer whose fill reached :data:`GROW_FILL` (the reader came back to find
  a quarter of the ring used, twice what it lets gather: a pause four times as long
  would have dropped) to twice its size, one half full to four times, and one that
  dropped to eight times (the reader is falling behind now, and a switch takes a few
  reads: the step must be big enough to hold out meanwhile); the largest of those
  steps that keeps every ring of the trace (those in use, those being made or drained,
  and the new one) within the cap ``max_bytes``. A ring that may not grow even twofold
  gets one ``capped`` decision per size (noted once).
* **Shrink** a buffer larger than ``base_bytes`` whose fill stayed below
  :data:`SHRINK_FILL` with no drop for ``quiet_s`` seconds, to half its size (its fill
  then at most doubles: still far below :data:`GROW_FILL`, so it does not grow back at
  once); the quiet period then starts again, so an idle ring steps down to its base.

Sizes stay powers of two of pages between ``base_bytes`` and :data:`MAX_RING_BYTES`.

The start size the CLI gives when ``--buffer-pages`` is not (:func:`default_start_pages`)
is part of the policy too: big enough that a reader sharing its CPU is not overrun
before the first check, small enough to leave the cap for growth.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ringtool.errors import ArgumentError
from ringtool.trace.units import size_text

#: Grow once the reader finds a ring this full (0..1; the trace reads at 1/8).
GROW_FILL = 0.25
#: Shrink a ring whose fill stayed below this for the quiet period.
SHRINK_FILL = 1 / 16
#: One ring at most (the CLI's --buffer-pages bound: 1 GiB).
MAX_RING_BYTES = 1 << 30
#: The default cap is this share of the machine's memory...
DEFAULT_RAM_SHARE = 64
#: ... but at most this.
DEFAULT_MAX_BYTES = 256 << 20
#: Seconds of quiet before a ring steps down.
DEFAULT_QUIET_S = 30.0

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class BufferSample:
    """What one check sees of one buffer (see the module doc)."""

    buffer_id: int
    size: int
    fill: float
    dropped: int
    busy: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """``grow`` or ``shrink`` buffer ``buffer_id`` from ``size`` to ``to`` bytes, or
    ``capped``: it would grow to ``to`` but the cap forbids it. ``why`` in words."""

    buffer_id: int
    kind: Literal["grow", "shrink", "capped"]
    size: int
    to: int
    why: str


def default_max_bytes(ram_bytes: int, start_bytes: int) -> int:
    """The default cap: 1/64 of the memory, at most 256 MiB, and never below what the
    rings take at start (``start_bytes``)."""
    return max(start_bytes, default_cap(ram_bytes))


#: The default start ring: at least this many pages per CPU...
START_PAGES_MIN = 128
#: ... at most this many...
START_PAGES_MAX = 4096
#: ... and every CPU's together at most this share of the default cap.
START_CAP_SHARE = 8


def default_start_pages(cap_bytes: int, ncpus: int) -> int:
    """The default ``--buffer-pages`` under a cap of ``cap_bytes`` on every ring
    together (``--max-buffer-mb``, or :func:`default_cap`): the largest power of two
    from :data:`START_PAGES_MIN` to :data:`START_PAGES_MAX` whose rings, one per CPU,
    take at most 1/:data:`START_CAP_SHARE` of it. A small ring fills in milliseconds at
    a few hundred thousand events/s (512 KiB: 6.7 ms at 220 k opens/s), and a reader
    that shares its CPU can wait longer than that before the first growth. The first
    read comes at a quarter (the adaptive wakeup), so the rest must hold what comes
    until the reader has run and the first growth has switched: a 4 MiB ring leaves 30
    ms at 100 MB/s (the default sources' opens at 260 k/s), less than a virtual CPU
    that the host takes away for 100 ms gives; 16 MiB leaves 120 ms. Many CPUs or a
    small cap keep the start small (4 MiB at 8 CPUs and 128 pages at 64 under the
    256 MiB default)."""
    budget = cap_bytes // START_CAP_SHARE
    pages = START_PAGES_MAX
    while pages > START_PAGES_MIN and max(1, ncpus) * pages * 4096 > budget:
        pages //= 2
    return pages


def default_cap(ram_bytes: int) -> int:
    """1/64 of the memory, at most 256 MiB: the default cap before the start rings are
    known (:func:`default_max_bytes` raises it to them)."""
    return min(ram_bytes // DEFAULT_RAM_SHARE, DEFAULT_MAX_BYTES)


class GrowthPolicy:
    """Decides which buffers grow or shrink (see the module doc). ``base_bytes``: the
    rings' size at start (never shrunk below); ``max_bytes``: the cap on all rings
    together; ``quiet_s``: how long a ring stays idle before it steps down."""

    def __init__(self, base_bytes: int, max_bytes: int, quiet_s: float = DEFAULT_QUIET_S) -> None:
        if base_bytes <= 0 or base_bytes & (base_bytes - 1):
            raise ArgumentError(f"base_bytes must be a power of two, not {base_bytes!r}")
        if quiet_s < 0:
            raise ArgumentError(f"quiet_s must be >= 0, not {quiet_s!r}")
        self.base_bytes = base_bytes
        self.max_bytes = max_bytes
        self.quiet_s = quiet_s
        self._active: dict[int, float] = {}  # buffer id -> last time it was not idle
        self._capped: dict[int, int] = {}  # buffer id -> the size it was capped at

    def decide(self, samples: Sequence[BufferSample], *, in_use: int, now: float) -> list[Decision]:
        """The decisions of one check. ``in_use``: the bytes of every ring the trace
        has now (in use, being made, being drained)."""
        out: list[Decision] = []
        for s in samples:
            last = self._active.setdefault(s.buffer_id, now)
            pressed = s.dropped > 0 or s.fill >= GROW_FILL
            if s.dropped > 0 or s.fill >= SHRINK_FILL or s.busy:
                self._active[s.buffer_id] = last = now
            if s.busy:
                continue
            if pressed:
                d = self._grow(s, in_use)
                if d is not None:
                    out.append(d)
                    if d.kind == "grow":
                        in_use += d.to
            elif s.size > self.base_bytes and now - last >= self.quiet_s:
                to = max(self.base_bytes, s.size // 2)
                out.append(Decision(s.buffer_id, "shrink", s.size, to,
                                    f"idle {now - last:.0f} s"))  # fmt: skip
                self._active[s.buffer_id] = now
        return out

    def _grow(self, s: BufferSample, in_use: int) -> Decision | None:
        why = f"dropped {s.dropped}" if s.dropped else f"{100 * s.fill:.0f}% full"
        factor = 8 if s.dropped else 4 if s.fill >= 2 * GROW_FILL else 2
        while factor >= 2:
            to = s.size * factor
            factor //= 2
            if to <= MAX_RING_BYTES and in_use + to <= self.max_bytes:
                self._capped.pop(s.buffer_id, None)
                return Decision(s.buffer_id, "grow", s.size, to, why)
        if self._capped.get(s.buffer_id) == s.size:
            return None  # told once for this size
        self._capped[s.buffer_id] = s.size
        return Decision(s.buffer_id, "capped", s.size, to, why)


__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_QUIET_S",
    "GROW_FILL",
    "MAX_RING_BYTES",
    "MIB",
    "SHRINK_FILL",
    "START_CAP_SHARE",
    "START_PAGES_MAX",
    "START_PAGES_MIN",
    "BufferSample",
    "Decision",
    "GrowthPolicy",
    "default_cap",
    "default_max_bytes",
    "default_start_pages",
    "size_text",
]
