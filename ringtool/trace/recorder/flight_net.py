"""The net source's part of a flight recorder (``ringtool trace --flight-recorder SIZE
-i IFACE``): which packets the overwrite perf rings hold that no dump wrote yet.

The net source's PERF_EVENT_ARRAY is opened with ``write_backward``
(:class:`ringtool.trace.reading.net.NetSource` ``overwrite=True``): nothing is read while
tracing, and a dump is :meth:`ringtool.PerfBuffer.snapshot`, which returns each CPU's
samples oldest first. A CPU's samples are in the order of their ``struct trace_net``
timestamps (``bpf_ktime_get_ns`` taken before ``perf_event_output`` on that CPU), so
:class:`NetDumps` keeps, per CPU, the newest timestamp a dump wrote and takes only
what is newer; a watermark across CPUs would lose a packet that a CPU recorded after
its own ring was copied but before another CPU's newer one was.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence

import numpy as np

_TS = struct.Struct("<Q")


def ts_offset(net: np.dtype[np.void]) -> int:
    """Where ``h.ts`` is in a ``struct trace_net`` sample (the layout's ``net`` dtype)."""
    assert net.fields is not None
    hdr, off = net.fields["h"][0], net.fields["h"][1]
    assert hdr.fields is not None
    return int(off) + int(hdr.fields["ts"][1])


class NetDumps:
    """The samples of each dump that no earlier dump wrote, in timestamp order.

    ``offset``: where the u64 kernel timestamp is in a sample (:func:`ts_offset`). A
    sample too short to hold it cannot be told from one already written: it is counted
    in :attr:`unreadable` and not returned (the kernel writes whole headers, so this
    stays 0 unless the layout is wrong)."""

    def __init__(self, offset: int) -> None:
        self._off = offset
        self._last: dict[int, int] = {}  # per CPU: the newest ktime a dump wrote
        self.unreadable = 0

    def take(self, snapshot: Mapping[int, Sequence[bytes]]) -> list[tuple[int, bytes]]:
        """``snapshot``: per CPU, samples oldest first (:meth:`ringtool.PerfBuffer.snapshot`).
        Returns the new ones as ``(cpu, raw sample)``, oldest first across CPUs."""
        fresh: list[tuple[int, int, bytes]] = []
        end = self._off + _TS.size
        for cpu, samples in snapshot.items():
            last = newest = self._last.get(cpu, 0)
            for raw in samples:
                if len(raw) < end:
                    self.unreadable += 1
                    continue
                (ts,) = _TS.unpack_from(raw, self._off)
                if ts > last:
                    fresh.append((ts, cpu, raw))
                    newest = max(newest, ts)
            self._last[cpu] = newest
        fresh.sort(key=lambda t: t[0])  # a dump only: not on the tracing path
        return [(cpu, raw) for _ts, cpu, raw in fresh]


__all__ = ["NetDumps", "ts_offset"]
