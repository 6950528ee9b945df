"""Decode trace records (numpy arrays of the header's dtypes) into event dicts.

An event dict always has ``type`` (``exec``/``exit``/``fork``/``open``/``syscall``/
``net``), ``ts`` (CLOCK_REALTIME seconds, float), ``cpu``, ``pid``, ``tid``, ``comm``,

``cgroup``, ``uid``, ``gid`` (every type but net); then per type:

* exec (every attempt, failed ones too): ``filename``, ``argv``, ``argv_truncated``,
  ``ppid``, ``ret`` (0 or -errno), ``syscall`` (``execve``/``execveat``)
* exit: ``exit_code`` (None when the process ended without exit(2)/exit_group(2), e.g.
  by a fatal signal), ``ppid``
* fork: ``child_pid``, ``child_comm``, ``ppid``
* open: ``path``, ``flags``, ``mode``, ``ret`` (fd or -errno), ``syscall`` (``open``,
  ``openat``, ``openat2``, ``creat`` or ``open_by_handle_at``)
* syscall (slower than the threshold): ``syscall``, ``nr``, ``latency_us``, ``ret``
* net (``struct trace_net`` records, :class:`ringtool.event.records.NetRecords`):
  ``src``, ``dst``, ``sport``, ``dport``, ``proto``, ``len``, ``ifindex``, ``dir``,
  ``captured`` (the packet bytes stay in the records: :meth:`NetRecords.payload`)

Strings (``comm``, paths, names) are the process's bytes: UTF-8 where they are, and
``\\xNN`` (four characters) for each byte that is not (see :func:`cstr`). They may hold
control characters and escape sequences: show them on a terminal only through
:func:`ringtool.event.safe_text.printable`.

Which record column each field comes from is :mod:`ringtool.event.fields` (the one
spec every output follows); a batch is decoded a column at a time
(:mod:`ringtool.event.columns`), so it costs a few numpy operations per field plus one
dict per record.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ringtool.event import columns as batch
from ringtool.event.columns import cstr
from ringtool.event.fields import Field, fields_of
from ringtool.event.layout import TraceLayout
from ringtool.event.records import NetRecords, Records

Event = dict[str, Any]


class Decoder:
    """Turns record batches into event dicts.

    ``syscall_name(nr)`` names syscalls (default ``"sys_<nr>"``). Kernel timestamps
    (CLOCK_MONOTONIC ns) become wall-clock seconds with an offset taken at creation.
    """

    def __init__(
        self,
        layout: TraceLayout,
        syscall_name: Callable[[int], str] | None = None,
        *,
        realtime_offset_ns: int | None = None,
    ) -> None:
        self.layout = layout
        self.types = layout.type_names
        #: type value -> the struct its records are viewed as (tcp: struct trace_tcp)
        self.views = layout.views
        self.syscall_name = syscall_name or (lambda nr: f"sys_{nr}")
        if realtime_offset_ns is None:
            realtime_offset_ns = time.time_ns() - time.monotonic_ns()
        self.offset_ns = realtime_offset_ns
        #: net samples shorter than ``struct trace_net``: counted here, not decoded
        self.malformed = 0

    def wall(self, ts_ns: int) -> float:
        return (ts_ns + self.offset_ns) / 1e9

    def values(self, rec: np.ndarray[Any, Any], f: Field) -> list[Any]:
        """Field ``f`` (:mod:`ringtool.event.fields`) of every record of ``rec``."""
        return batch.values(rec, f, self.offset_ns, self.syscall_name)

    def decode(self, arr: np.ndarray[Any, Any]) -> list[Event]:
        """Event dicts of a record array (``struct trace_event``, or ``struct
        trace_net``: a :class:`NetRecords`' ``rec``), in array order."""
        out: list[Any] = [None] * len(arr)
        for g in batch.by_type(arr, self.types, self.views):
            fields = fields_of(g.name)
            keys = ("type", *(f.key for f in fields))
            cols = [[g.name] * len(g.rec), *(self.values(g.rec, f) for f in fields)]
            events = [dict(zip(keys, row, strict=True)) for row in zip(*cols, strict=True)]
            if g.positions is None:
                return events
            for i, ev in zip(g.positions.tolist(), events, strict=True):
                out[i] = ev
        return out

    def decode_records(self, records: Records) -> list[Event]:
        """Event dicts of a batch: its events in array order, then its packets."""
        return [ev for arr in records.arrays() for ev in self.decode(arr)]

    def net_records(self, samples: Sequence[tuple[int, bytes]]) -> NetRecords:
        """The records of raw net samples ``(cpu, struct trace_net + packet bytes)``
        (:meth:`NetRecords.from_samples`); a sample too short to hold its header is
        counted in :attr:`malformed` instead."""
        net = NetRecords.from_samples(self.layout.net, self.layout.type_id("net"), samples)
        self.malformed += len(samples) - len(net)
        return net


__all__ = ["Decoder", "Event", "cstr"]
