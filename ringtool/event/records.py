"""The one form records take on their way to the outputs and sinks: :class:`Records`.

A trace batch is numpy structured arrays of the structs of ``bpf/trace_event.h``
(:mod:`ringtool.event.layout`), one per record form: ``events`` (``struct
trace_event``: exec, exit, fork, open, syscall, mark) and ``net`` (:class:`NetRecords`:
``struct trace_net`` headers, the packet bytes beside them). Every output reads both
through the one field table (:mod:`ringtool.event.fields`), a column at a time.

Net samples (``struct trace_net`` + the first ``captured`` packet bytes, as the perf
buffer holds them) become :class:`NetRecords` with :meth:`NetRecords.from_samples`:
the samples are joined into one ``bytes`` buffer, their headers gathered into one
array with one numpy index, and each sample's place in the buffer kept as ``start`` /
``size`` columns. No object is made per packet.

Lifetime: an output or sink gets a :class:`Records` that is valid during its call
only: ``events`` is often a view of a mapped ring, consumed after the call. Whatever
keeps records past the call copies them (``events.copy()``, :meth:`NetRecords.take`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np

Array = np.ndarray[Any, Any]


def _frozen(a: Array) -> Array:
    a.flags.writeable = False
    return a


def copy_records(dst: Array, src: Array) -> None:
    """``dst[...] = src`` for record arrays of one shape: as a copy of their bytes
    when they are 1-D arrays of the same dtype, ``dst`` contiguous and ``src`` of any
    stride (a read's records are views of the mapped ring, each after its 8-byte
    header: numpy assigns a structured array member by member, nested structs and
    ``char[]`` members each a pass, five times the time of the bytes' copy), else by
    numpy's assignment."""
    if (dst.dtype == src.dtype and dst.shape == src.shape and dst.ndim == 1
            and dst.flags.c_contiguous):  # fmt: skip
        n = len(src)
        dst.reshape(n, 1).view(np.uint8)[...] = src.reshape(n, 1).view(np.uint8)
    else:
        dst[...] = src


@dataclass(frozen=True)
class NetRecords:
    """Net packets: ``rec[i]`` is packet i's ``struct trace_net`` (its ``h.type`` is
    ``TRACE_NET``), and ``data[start[i] : start[i] + size[i]]`` its whole sample: the
    same struct, then its packet bytes (:meth:`payload`). ``size`` is the struct plus
    ``captured`` bytes, or less where the sample held fewer. ``rec``, ``start`` and
    ``size`` (int64) have one row per packet; ``data`` may hold more than the packets
    (padding, packets left out by :meth:`take`'s callers)."""

    rec: Array
    data: bytes
    start: Array
    size: Array

    @classmethod
    def empty(cls, dtype: np.dtype[Any]) -> NetRecords:
        """No packets (``rec`` of ``dtype``)."""
        none = _frozen(np.zeros(0, np.int64))
        return cls(_frozen(np.zeros(0, dtype)), b"", none, none)

    @classmethod
    def from_samples(
        cls, dtype: np.dtype[Any], net_type: int, samples: Sequence[tuple[int, bytes]]
    ) -> NetRecords:
        """The records of raw samples ``(cpu, sample)`` (their cpu is the header's
        ``h.cpu``; the argument is not read), in their order; ``net_type`` is the value
        of ``TRACE_NET``. A sample shorter than ``dtype`` (the struct) is left out:
        the caller counts ``len(samples) - len(result)`` as malformed."""
        raws = list(map(itemgetter(1), samples))
        lens = np.fromiter(map(len, raws), np.int64, len(raws))
        data = b"".join(raws)
        starts = np.cumsum(lens) - lens
        width = dtype.itemsize
        whole = lens >= width
        if not whole.all():
            starts, lens = starts[whole], lens[whole]
        u8 = np.frombuffer(data, np.uint8)
        rec = u8[starts[:, None] + np.arange(width)].view(dtype).reshape(-1)
        rec["h"]["type"] = net_type
        size = np.minimum(lens, width + rec["captured"].astype(np.int64))
        return cls(rec, data, starts, size)

    def __len__(self) -> int:
        return len(self.rec)

    def sample(self, i: int) -> bytes:
        """Packet ``i``'s sample: its ``struct trace_net`` and its packet bytes."""
        start = int(self.start[i])
        return self.data[start : start + int(self.size[i])]

    def payload(self, i: int) -> bytes:
        """Packet ``i``'s captured bytes (the first of the packet)."""
        start = int(self.start[i])
        return self.data[start + self.rec.dtype.itemsize : start + int(self.size[i])]

    def take(self, index: slice | Array) -> NetRecords:
        """The packets ``index`` selects (a slice, positions or a mask), as an owned
        copy holding only their samples (what a sink that keeps packets stores)."""
        start, size = self.start[index], self.size[index]
        ends = np.cumsum(size)
        at = ends - size
        total = int(ends[-1]) if len(ends) else 0
        pos = np.repeat(start - at, size) + np.arange(total)
        data = np.frombuffer(self.data, np.uint8)[pos].tobytes()
        return NetRecords(self.rec[index].copy(), data, at, size)

    def __getitem__(self, index: slice) -> NetRecords:
        """:meth:`take` of a slice: ``net[a:b]`` (an owned copy)."""
        return self.take(index)

    def concat(self, other: NetRecords) -> NetRecords:
        """These packets, then ``other``'s, as an owned copy."""
        if not len(self):
            return other.take(slice(None))
        data = self.data + other.data
        start = np.concatenate((self.start, other.start + len(self.data)))
        rec = np.concatenate((self.rec, other.rec))
        return NetRecords(rec, data, start, np.concatenate((self.size, other.size))).take(
            slice(None)
        )


#: No packets (of no dtype: nothing reads the fields of zero records).
NO_PACKETS = NetRecords.empty(np.dtype([]))


@dataclass(frozen=True)
class Records:
    """One batch of trace records, what every output and sink is handed: ``events``
    (``struct trace_event`` records, any mix of their types, in read order) and
    ``net`` (packets, in timestamp order; none by default). Valid during the call it
    is handed to only (see the module doc)."""

    events: Array
    net: NetRecords = field(default=NO_PACKETS)

    def __len__(self) -> int:
        return len(self.events) + len(self.net)

    def arrays(self) -> tuple[Array, ...]:
        """The non-empty structured arrays, in output order: the events, then the
        packets' headers (each is read by type with
        :func:`ringtool.event.columns.by_type`)."""
        return tuple(a for a in (self.events, self.net.rec) if len(a))


__all__ = ["NO_PACKETS", "NetRecords", "Records", "copy_records"]
