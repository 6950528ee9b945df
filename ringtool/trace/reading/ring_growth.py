"""The trace's rings that grow instead of dropping (and shrink back when idle).

:class:`RingGrowth` ties the trace session's ring group and consumer to a
:class:`~ringtool.readers.ringbuf_resize.RingResizer` (the switch itself: nothing lost
or read twice, see that module) and a
:class:`~ringtool.trace.reading.growth_policy.GrowthPolicy` (when, how big, the cap):

* :meth:`RingGrowth.fills` -- each ring's fill now, called before every read (and by
  the pacer); the highest since the last check is what the policy sees;
* :meth:`RingGrowth.check` -- from the loop's every wait: advances switches in flight,
  and at most every :data:`CHECK_S` reads the per-CPU drop counters (one map lookup)
  and runs the policy. So a ring that dropped is moved to a bigger one within tens of
  ms, not at the next one-second tick;
* one note per switch when it ends (``on_note``: the dashboard and every output) and
  one when the cap stops a ring from growing; :meth:`RingGrowth.record` is the
  per-CPU count and size for the stats lines and the summary.

With growth off (``max_bytes`` None) only the reading part runs: nothing is resized.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from ringtool.readers.ringbuf import RingBuffer
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.readers.ringbuf_resize import RingResizer, Switch
from ringtool.trace.reading.growth_policy import BufferSample, Decision, GrowthPolicy, size_text

#: Seconds between two runs of the policy (and reads of the drop counters).
CHECK_S = 0.05


@dataclass
class CpuRings:
    """One buffer's switches so far: ``grown``/``shrunk`` counts, the largest size."""

    grown: int = 0
    shrunk: int = 0
    peak_bytes: int = 0


class RingGrowth:
    """See the module doc. ``max_bytes``: the cap on every ring together (None: growth
    off); ``quiet_s``: idle seconds before a ring steps down; ``on_note(text)``."""

    def __init__(
        self,
        group: RingBufGroup,
        rb: RingBuffer,
        *,
        max_bytes: int | None,
        quiet_s: float,
        on_note: Callable[[str], None],
    ) -> None:
        self.group = group
        self.rb = rb
        self.resizer = RingResizer(group, rb)
        self.max_bytes = max_bytes
        self.policy = (
            None if max_bytes is None else GrowthPolicy(group.ring_bytes, max_bytes, quiet_s)
        )
        self.on_note = on_note
        self.per_buffer: dict[int, CpuRings] = {}
        self._fill_max: dict[int, float] = {}
        self._drops_seen: list[int] | None = None
        self._next_check = 0.0
        self._why: dict[int, str] = {}  # buffer id -> why its switch in flight began

    # --- reading ----------------------------------------------------------------------

    def fills(self) -> list[float]:
        """Per buffer (ring index): how full its ring is now, 0..1 (the retiring ring's
        fill when it is fuller); remembered for the next check."""
        out = []
        seen = self._fill_max
        for bid in range(self.rb.ring_cnt):
            ring = self.rb.ring(bid)
            frac = ring.avail_data_size / ring.size
            old = self.resizer.retiring(bid)
            if old is not None:
                frac = max(frac, old.avail_data_size / old.size)
            if frac > seen.get(bid, 0.0):
                seen[bid] = frac
            out.append(frac)
        return out

    @contextmanager
    def lease_batch(self, dtype: np.dtype[Any], limit: int) -> Iterator[list[np.ndarray[Any, Any]]]:
        """Up to ``limit`` records as arrays: the retiring rings' first, as one copy,
        then the consumer's as views of the mapped rings
        (:meth:`RingBuffer.lease_batch`), valid inside the ``with`` block only and
        consumed when it ends."""
        old = self.resizer.read_batch(dtype, limit)
        arrays = [old] if len(old) else []
        if len(old) >= limit:
            yield arrays
            return
        with self.rb.lease_batch(dtype, limit - len(old)) as lease:
            yield arrays + lease.arrays

    # --- deciding ---------------------------------------------------------------------

    def check(self, now: float | None = None) -> None:
        """Advance the switches in flight; every :data:`CHECK_S` run the policy."""
        for sw in self.resizer.step():
            self._ended(sw)
        now = time.monotonic() if now is None else now
        if self.policy is None or now < self._next_check:
            return
        self._next_check = now + CHECK_S
        samples = self._samples()
        in_use = self.group.ring_bytes_total() + self.resizer.bytes_pending
        for d in self.policy.decide(samples, in_use=in_use, now=now):
            self._act(d)

    def _samples(self) -> list[BufferSample]:
        drops = self.group.dropped()
        prev = self._drops_seen if self._drops_seen is not None else drops
        self._drops_seen = drops
        fills, self._fill_max = self._fill_max, {}
        samples = []
        for bid in range(self.rb.ring_cnt):
            cpus = self.group.layout.cpus_of(bid)
            dropped = sum(drops[c] - prev[c] for c in cpus if c < len(drops) and c < len(prev))
            samples.append(BufferSample(bid, self.group.ring_size(bid), fills.get(bid, 0.0),
                                        dropped, self.resizer.busy(bid)))  # fmt: skip
        return samples

    def _act(self, d: Decision) -> None:
        if d.kind == "capped":
            self.on_note(f"{self._who(d.buffer_id)}: ring stays at {size_text(d.size)} "
                         f"({d.why}): growing it to {size_text(d.to)} would pass "
                         f"--max-buffer-mb {self._cap_mb()}")  # fmt: skip
            return
        if self.resizer.resize(d.buffer_id, d.to) is not None:
            self._why[d.buffer_id] = d.why

    def _ended(self, sw: Switch) -> None:
        who = self._who(sw.buffer_id)
        why = self._why.pop(sw.buffer_id, "")
        if sw.state != "done":
            self.on_note(f"{who}: ring not moved to {size_text(sw.new_bytes)}: {sw.error}")
            return
        row = self.per_buffer.setdefault(sw.buffer_id, CpuRings(peak_bytes=sw.old_bytes))
        grew = sw.new_bytes > sw.old_bytes
        if grew:
            row.grown += 1
        else:
            row.shrunk += 1
        row.peak_bytes = max(row.peak_bytes, sw.new_bytes)
        took = 1000 * ((sw.finished or sw.started) - sw.started)
        verb = "grown" if grew else "shrunk"
        self.on_note(f"{who}: ring {verb} {size_text(sw.old_bytes)} -> "
                     f"{size_text(sw.new_bytes)} ({why}; switched in {took:.0f} ms, "
                     "nothing lost)")  # fmt: skip

    def _who(self, bid: int) -> str:
        cpus = self.group.layout.cpus_of(bid)
        return f"cpu {cpus[0]}" if len(cpus) == 1 else f"ring buffer {bid}"

    def _cap_mb(self) -> str:
        mb = (self.max_bytes or 0) / (1 << 20)
        return f"{mb:.0f}" if mb == int(mb) else f"{mb:g}"

    # --- reporting --------------------------------------------------------------------

    def record(self) -> dict[str, Any]:
        """The rings for the stats lines and the summary: the cap, the bytes in use,
        switches, and per CPU its ring's size, grown/shrunk counts and largest size."""
        per_cpu = []
        for bid in range(self.rb.ring_cnt):
            size = self.group.ring_size(bid)
            row = self.per_buffer.get(bid, CpuRings())
            for cpu in self.group.layout.cpus_of(bid):
                per_cpu.append({"cpu": cpu, "bytes": size, "grown": row.grown,
                                "shrunk": row.shrunk,
                                "peak_bytes": max(row.peak_bytes, size)})  # fmt: skip
        return {
            "growth": self.max_bytes is not None,
            "max_bytes": self.max_bytes,
            "bytes": self.group.ring_bytes_total(),
            "switches": sum(r.grown + r.shrunk for r in self.per_buffer.values()),
            "per_cpu": per_cpu,
        }

    def finish(self) -> None:
        """Before the last read: no new switch, and every one in flight sealed (see
        :meth:`RingResizer.finish`), so the last read reads every ring to its end."""
        self.policy = None
        self.resizer.finish()

    def close(self) -> None:
        """Stop: wait for a switch in flight, unmap the retiring rings."""
        self.resizer.close()


__all__ = ["CHECK_S", "CpuRings", "RingGrowth"]
