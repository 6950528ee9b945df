"""Reading the cpuwait source's histograms (bpf/trace_cpuwait.c).

Each ``struct cpuwait_hist`` holds a set of waits for a CPU in log2 slots of
microseconds (slot ``s`` >= 1: ``[2**(s-1), 2**s)`` µs, slot 0: under 1 µs: runqlat's
slots, bcc's ``bpf_log2l``; their count is the slots' sum), their sum (ns) and, per
process, its group leader's comm. ``proc_wait`` (an LRU hash keyed by tgid) has one
per process, ``all_wait`` (a per-CPU array) the machine's, added up here; ``lost``
counts the waits the kernel could not count (its maps full). Read once per interval
with :func:`ringtool.trace.reading.hist_maps.all_items` (batched lookups).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ringtool.event.decode import cstr
from ringtool.kernel import bpf
from ringtool.trace.reading.hist_maps import all_items

#: Slots of a histogram (bpf: TRACE_CPUWAIT_SLOTS; the last one also holds longer waits)
SLOTS = 32
#: Processes the kernel keeps a histogram of (bpf: TRACE_CPUWAIT_PROCS)
PROCS = 4096


@dataclass(frozen=True, slots=True)
class WaitHist:
    """One histogram: ``slots`` as ``{slot: count}`` (log2 µs, nonzero ones only),
    ``count`` waits summing to ``total_ns``; ``comm``: the process's name (the
    machine's: "")."""

    slots: dict[int, int] = field(default_factory=dict)
    count: int = 0
    total_ns: int = 0
    comm: str = ""

    def __add__(self, other: WaitHist) -> WaitHist:
        slots = dict(self.slots)
        for s, n in other.slots.items():
            slots[s] = slots.get(s, 0) + n
        return WaitHist(slots, self.count + other.count, self.total_ns + other.total_ns,
                        self.comm or other.comm)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CpuWaits:
    """One reading: the machine's histogram, each process's (by tgid), and the
    waits the kernel could not count (``lost``)."""

    machine: WaitHist
    procs: dict[int, WaitHist]
    lost: int = 0


def hist_of(value: Any) -> WaitHist:
    """A ``struct cpuwait_hist`` (a BCC leaf) as a :class:`WaitHist`."""
    slots = {i: int(n) for i, n in enumerate(value.slots) if n}
    return WaitHist(slots, sum(slots.values()), int(value.total_ns), cstr(bytes(value.comm)))


def read_waits(obj: Any) -> CpuWaits:
    """The cpuwait source's histograms now (``obj``: its BCC object)."""
    machine = WaitHist()
    for per_cpu in obj[b"all_wait"].values():
        for value in per_cpu:
            machine = machine + hist_of(value)
    procs = {int(getattr(k, "value", k)): hist_of(v) for k, v in all_items(obj[b"proc_wait"])}
    return CpuWaits(machine, procs, sum(bpf.percpu_u64(obj[b"lost"].map_fd)))


__all__ = ["PROCS", "SLOTS", "CpuWaits", "WaitHist", "hist_of", "read_waits"]
