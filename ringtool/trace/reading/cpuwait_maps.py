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

import numpy as np

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


#: ``struct cpuwait_hist``: the slots, the sum (ns), the comm (bpf/trace_cpuwait.c)
HIST_DTYPE = np.dtype([("slots", "<u8", (SLOTS,)), ("total_ns", "<u8"), ("comm", "S16")])


def hist_of(raw: bytes) -> WaitHist:
    """A ``struct cpuwait_hist``'s bytes as a :class:`WaitHist`."""
    h = np.frombuffer(raw, dtype=HIST_DTYPE, count=1)[0]
    slots = {i: int(n) for i, n in enumerate(h["slots"].tolist()) if n}
    return WaitHist(slots, sum(slots.values()), int(h["total_ns"]), cstr(bytes(h["comm"])))


def _raw(value: Any) -> bytes:
    """A table's value as its bytes: BCC gives a ctypes struct, the program cache's
    table the bytes themselves."""
    return value if isinstance(value, bytes) else bytes(memoryview(value))


def read_waits(obj: Any) -> CpuWaits:
    """The cpuwait source's histograms now (``obj``: its loaded program, compiled by
    BCC or from the program cache: both are read as bytes)."""
    machine = WaitHist()
    for raw in bpf.percpu_values(obj[b"all_wait"].map_fd, HIST_DTYPE.itemsize):
        machine = machine + hist_of(raw)
    procs = {int(getattr(k, "value", k)): hist_of(_raw(v))
             for k, v in all_items(obj[b"proc_wait"])}  # fmt: skip
    return CpuWaits(machine, procs, sum(bpf.percpu_u64(obj[b"lost"].map_fd)))


__all__ = ["HIST_DTYPE", "PROCS", "SLOTS", "CpuWaits", "WaitHist", "hist_of", "read_waits"]
