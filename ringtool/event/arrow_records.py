"""Trace records as Apache Arrow columns and back: the rows of a recording.

:class:`RecordSchema` turns a :class:`~ringtool.event.records.Records` batch into one
``pyarrow.RecordBatch`` (:meth:`RecordSchema.to_arrow`) and such a batch back into the
same records (:meth:`RecordSchema.from_arrow`): the same bytes of every field the
layout declares, in the same order (the events, then the packets). Both directions are
numpy and Arrow column operations on the whole batch: no Python runs per record.

The columns are derived from the layout (``bpf/trace_event.h`` through
:mod:`ringtool.event.layout`), one per member of its record structs, named as the
member (the common header's without ``h.``): ``struct trace_event``'s, those of the
structs a type has of its own (``struct trace_tcp``: ``duration_ns``, ``tx_bytes``,
...), and ``struct trace_net``'s; a name two structs share with one type is one column
(``uid``, ``saddr``, ``sport``...). A member that is not the row's struct's is null.
``pad`` members are not data and are not kept. Besides them:

* ``type``: the type's name (dictionary-encoded), ``type_id`` its ``TRACE_*`` value
  (``h.type``);
* ``time``: ``ts`` (CLOCK_MONOTONIC ns) as a UTC timestamp (ns), by the recording's
  realtime offset;
* ``payload``: a packet's captured bytes (null for the other rows).

Kinds: integers as their C type (``u32``: ``uint32``...); ``char[N]`` (``comm``,
``data``) as ``binary`` of its bytes up to the trailing NULs (exec's ``data`` holds
several strings: nothing is decoded); ``u8[N]`` (addresses) as ``fixed_size_binary(N)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from ringtool.errors import RecordingError
from ringtool.event.arrow_binary import NARROW, binary, binary_matrix, nulls, strings, validity
from ringtool.event.data_lengths import DATA, DATA_LEN, DataLengths
from ringtool.event.layout import RECORD_PAD, LayoutError, TraceLayout
from ringtool.event.records import NetRecords, Records

Array = np.ndarray[Any, Any]

#: The struct of every record's common header, whose members are named without ``h.``.
HEADER = "h"
#: Columns that are not a struct member (derived from one, or the packet bytes).
TIME, TYPE, TYPE_ID, PAYLOAD = "time", "type", "type_id", "payload"


@dataclass(frozen=True)
class Member:
    """One column's source in one record struct: ``path`` (``("h", "pid")``), its
    numpy dtype and Arrow type."""

    path: tuple[str, ...]
    dtype: np.dtype[Any]
    arrow: pa.DataType


def _arrow_type(dt: np.dtype[Any], where: str) -> pa.DataType:
    if dt.subdtype is not None:
        base, shape = dt.subdtype
        if base == np.uint8 and len(shape) == 1:
            return pa.binary(int(shape[0]))
        raise LayoutError(f"{where}: an array of {base} has no column kind (u8[N] only)")
    if dt.kind == "S":
        return pa.binary()
    if dt.kind in "iu":
        return pa.from_numpy_dtype(dt)
    raise LayoutError(f"{where}: a member of kind {dt} has no column kind")


def _members(dtype: np.dtype[Any], struct: str) -> dict[str, Member]:
    out: dict[str, Member] = {}
    for name in dtype.names or ():
        dt: np.dtype[Any] = dtype[name]
        if name == HEADER and dt.names:
            for hn in dt.names:
                hdt: np.dtype[Any] = dt[hn]
                col = TYPE_ID if hn == "type" else hn
                out[col] = Member((HEADER, hn), hdt, _arrow_type(hdt, f"{struct}.h.{hn}"))
        elif not name.startswith(RECORD_PAD) and name != DATA_LEN:
            out[name] = Member((name,), dt, _arrow_type(dt, f"{struct}.{name}"))
    return out


def _get(rec: Array, path: tuple[str, ...]) -> Array:
    for p in path:
        rec = rec[p]
    return rec


def _to_arrow(values: Array, valid: Array | None, arrow: pa.DataType,
              lens: Array | None = None) -> pa.Array:  # fmt: skip
    """A member's values (a field of the records: any stride) as a column of ``arrow``
    (``valid``: which rows are not null; None: all), from their buffer (one copy when
    strided; not ``pa.array``, whose first call imports numpy.ma). A ``char[N]``
    member: each value its first ``lens`` bytes (:class:`DataLengths`), or without
    ``lens`` up to its last non-NUL byte."""
    if values.dtype.kind == "S":
        if lens is None:
            return binary(values, valid)
        return strings(values, lens, valid)
    data = pa.py_buffer(np.ascontiguousarray(values))
    return pa.Array.from_buffers(arrow, len(values), [validity(valid), data])


def _wide(m: Member) -> bool:
    """A ``char[N]`` member that holds strings cut at a NUL (``data``), not a name."""
    return m.dtype.kind == "S" and m.dtype.itemsize > NARROW


def _numpy(col: pa.Array, m: Member, name: str) -> Array:
    """A column as numpy values of the member's dtype (nulls as zeros)."""
    if m.dtype.kind == "S":
        return binary_matrix(col, m.dtype.itemsize, name).view(m.dtype).reshape(-1)
    if pa.types.is_fixed_size_binary(m.arrow):
        width = m.arrow.byte_width
        col = col.fill_null(b"\0" * width) if col.null_count else col
        buf = np.frombuffer(col.buffers()[1], np.uint8)
        start = col.offset * width
        return buf[start : start + len(col) * width].reshape(len(col), width)
    return np.asarray(col.fill_null(0) if col.null_count else col, dtype=m.dtype)


class RecordSchema:
    """The columns of ``layout``'s records (see the module doc) and the conversions."""

    def __init__(self, layout: TraceLayout) -> None:
        self.layout = layout
        self.net_type = layout.type_id("net") if "net" in layout.names else None
        #: record struct -> its members by column; the event struct first, the net last
        self.forms: dict[str, dict[str, Member]] = {
            "trace_event": _members(layout.event, "trace_event")
        }
        self.view_of: dict[int, str] = {}
        for type_id, view in layout.views.items():
            name = f"view{type_id}"
            self.forms[name] = _members(view, layout.type_names.get(type_id, name))
            self.view_of[type_id] = name
        self.forms["trace_net"] = _members(layout.net, "trace_net")
        columns: dict[str, pa.DataType] = {}
        for struct, members in self.forms.items():
            for col, m in members.items():
                if columns.setdefault(col, m.arrow) != m.arrow:
                    raise LayoutError(
                        f"{struct}.{col} is {m.arrow}, another struct's "
                        f"{col} is {columns[col]}: one column, one type"
                    )
        #: column -> a member it is (its dtype and Arrow type)
        self._member = {c: m for members in self.forms.values() for c, m in members.items()}
        names = sorted(layout.type_names.items())
        self.type_names = pa.array([n for _, n in names], pa.string())
        #: ``type``'s code by type number; the last: every number above (-1: null)
        self._type_lut = np.full(max((t for t, _ in names), default=0) + 2, -1, np.int16)
        for i, (t, _) in enumerate(names):
            self._type_lut[t] = i
        self._data_lens = DataLengths(layout)
        head = [
            (n, t)
            for n, t in columns.items()
            if n in self.forms["trace_net"] and self.forms["trace_net"][n].path[0] == HEADER
        ]
        rest = [(n, t) for n, t in columns.items() if (n, t) not in head]
        fields = [
            pa.field(head[0][0], head[0][1], nullable=False),
            pa.field(TIME, pa.timestamp("ns", tz="UTC"), nullable=False),
            pa.field(TYPE, pa.dictionary(pa.int16(), pa.string())),
            *(pa.field(n, t, nullable=False) for n, t in head[1:]),
            *(pa.field(n, t) for n, t in rest),
            pa.field(PAYLOAD, pa.large_binary()),
        ]
        self.header = tuple(n for n, _ in head)
        #: columns of nulls of ``_null_cap`` rows (the largest batch's) on ``_zeros``,
        #: and their first ``_null_rows`` rows for the last batch (immutable: the next
        #: batch takes them again)
        self._null_cap = self._null_rows = -1
        self._null_full: dict[str, pa.Array] = {}
        self._null_cols: dict[str, pa.Array] = {}
        self._zeros = pa.py_buffer(b"")
        self.schema = pa.schema(fields)

    # --- records to columns ------------------------------------------------------------

    def _event_forms(self, events: Array, types: Array,
                     kinds: Array) -> list[tuple[str, Array, Array | None]]:  # fmt: skip
        """Each struct the events are viewed as: its name, the view, its rows (a mask;
        None: all of them). ``types``: the events' ``h.type``, ``kinds`` their
        :meth:`DataLengths.kinds`."""
        if not self.view_of or not len(events) or not DataLengths.own(kinds).any():
            return [("trace_event", events, None)]
        forms: list[tuple[str, Array, Array | None]] = []
        plain = np.ones(len(events), bool)
        for type_id, name in self.view_of.items():
            mask = types == type_id
            if mask.any():
                plain &= ~mask
                view = events.view(self.layout.views[type_id])
                forms.append((name, view, mask))
        if plain.all():
            return [("trace_event", events, None)]
        return [("trace_event", events, plain), *forms]

    def _null(self, name: str, arrow: pa.DataType, n: int) -> pa.Array:
        """Column ``name`` of ``n`` nulls: the first ``n`` rows of one made for the
        largest batch so far, on one zero buffer (:func:`nulls`; a slice from the
        first row: nothing allocated or written for a batch of another size)."""
        if n > self._null_cap:
            self._null_cap, self._null_full = n, {}
            self._zeros = pa.py_buffer(np.zeros(16 * n + 8, np.uint8))
        if n != self._null_rows:
            self._null_rows, self._null_cols = n, {}
        col = self._null_cols.get(name)
        if col is None:
            full = self._null_full.get(name)
            if full is None:
                full = self._null_full[name] = nulls(arrow, self._null_cap, self._zeros)
            col = self._null_cols[name] = full if n == self._null_cap else full.slice(0, n)
        return col

    def to_arrow(self, records: Records, offset_ns: int) -> pa.RecordBatch:
        """The batch's rows: its events, then its packets (``offset_ns``: CLOCK_REALTIME
        minus CLOCK_MONOTONIC, for ``time``)."""
        events, net = records.events, records.net
        ne, nn = len(events), len(net)
        n = ne + nn
        types = np.ascontiguousarray(events["h"]["type"])
        kinds = self._data_lens.kinds(types)
        forms = self._event_forms(events, types, kinds)
        lens = self._data_lens(events, kinds, n)
        cols: dict[str, pa.Array] = {}
        for name in self.schema.names:
            if name in (TIME, TYPE, PAYLOAD):
                continue
            net_m = self.forms["trace_net"].get(name)
            parts = [
                (view, mask, self.forms[f][name])
                for f, view, mask in forms
                if name in self.forms[f]
            ]
            m = net_m or (parts[0][2] if parts else self._member[name])
            if (not parts or not ne) and (net_m is None or not nn):
                cols[name] = self._null(name, m.arrow, n)
                continue
            if len(parts) == 1 and parts[0][1] is None and (nn == 0 or net_m is not None):
                values = types if name == TYPE_ID and not nn else _get(parts[0][0], m.path)
                if nn:
                    values = np.concatenate((values, _get(net.rec, m.path)))
                cols[name] = _to_arrow(values, None, m.arrow, lens if _wide(m) else None)
                continue
            shape = (n, *m.dtype.shape) if m.dtype.subdtype else (n,)
            out = np.zeros(shape, m.dtype.base if m.dtype.subdtype else m.dtype)
            valid = np.zeros(n, bool)
            for view, mask, pm in parts:
                src = _get(view, pm.path)
                if mask is None:
                    out[:ne], valid[:ne] = src, True
                else:
                    out[:ne][mask], valid[:ne] = src[mask], valid[:ne] | mask
            if net_m is not None and nn:
                out[ne:], valid[ne:] = _get(net.rec, net_m.path), True
            cols[name] = _to_arrow(
                out, None if valid.all() else valid, m.arrow, lens if _wide(m) else None
            )
        type_ids = np.asarray(cols[TYPE_ID])
        ts = np.asarray(cols[self.header[0]])
        cols[TIME] = _to_arrow(ts.view(np.int64) + offset_ns, None, self.schema.field(TIME).type)
        codes = self._type_lut[np.minimum(type_ids, len(self._type_lut) - 1)]
        cols[TYPE] = pa.DictionaryArray.from_arrays(
            _to_arrow(codes, None if not n or codes.min() >= 0 else codes >= 0, pa.int16()),
            self.type_names,
        )
        cols[PAYLOAD] = self._payloads(net, ne) if nn else self._null(PAYLOAD, pa.large_binary(), n)
        return pa.record_batch([cols[f] for f in self.schema.names], schema=self.schema)

    @staticmethod
    def _payloads(net: NetRecords, ne: int) -> pa.Array:
        """The packets' captured bytes, after ``ne`` null rows (the events')."""
        width = net.rec.dtype.itemsize if len(net) else 0
        plen = np.maximum(net.size - width, 0) if len(net) else np.zeros(0, np.int64)
        offsets = np.concatenate((np.zeros(ne + 1, np.int64), np.cumsum(plen)))
        total = int(offsets[-1])
        if total:
            pos = np.repeat(net.start + width - (offsets[ne + 1 :] - plen), plen)
            data = np.frombuffer(net.data, np.uint8)[pos + np.arange(total)].tobytes()
        else:
            data = b""
        valid = np.concatenate((np.zeros(ne, bool), np.ones(len(net), bool)))
        return pa.Array.from_buffers(
            pa.large_binary(),
            ne + len(net),
            [validity(valid) if ne else None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)],
        )

    # --- columns to records ------------------------------------------------------------

    def from_arrow(self, batch: pa.RecordBatch) -> Records:
        """The records of a batch :meth:`to_arrow` wrote (columns this layout lacks
        were refused by :meth:`check_schema`; those the batch lacks are zeros). A value
        where the row's struct has no such member is ignored; a null where it has one,
        or a string longer than its member, is a :class:`RecordingError`."""
        n = batch.num_rows
        payload = batch.column(PAYLOAD) if PAYLOAD in batch.schema.names else None
        is_net = np.asarray(payload.is_valid()) if payload is not None else np.zeros(n, bool)
        ev_rows = ~is_net
        events = np.zeros(int(ev_rows.sum()), self.layout.event)
        net_rec = np.zeros(int(is_net.sum()), self.layout.net)
        names = set(batch.schema.names)
        type_ids = np.asarray(batch.column(TYPE_ID)).astype(np.uint32)
        ev_types = type_ids[ev_rows]
        targets: list[tuple[str, Array, Array, Array]] = []  # struct, view, row mask, rows
        plain = np.ones(len(events), bool)
        for type_id, form in self.view_of.items():
            mask = ev_types == type_id
            plain &= ~mask
            targets.append((form, events.view(self.layout.views[type_id]), mask, ev_rows))
        targets.insert(0, ("trace_event", events, plain, ev_rows))
        targets.append(("trace_net", net_rec, np.ones(len(net_rec), bool), is_net))
        for form, view, mask, rows in targets:
            if not mask.any():
                continue
            for col, m in self.forms[form].items():
                if col not in names:
                    continue
                arrow_col = batch.column(col)
                valid = np.asarray(arrow_col.is_valid())[rows][mask]
                if not valid.all():
                    raise RecordingError(f"column {col}: empty in a record that has it")
                values = _numpy(arrow_col, m, col)[rows][mask]
                target = _get(view, m.path[:-1]) if len(m.path) > 1 else view
                target[m.path[-1]][mask] = values
        if DATA in names and self._data_lens.stored:  # as the BPF programs store it
            data = batch.column(DATA)
            lens = np.diff(np.frombuffer(data.buffers()[1], np.int32)[
                data.offset : data.offset + n + 1])  # fmt: skip
            events[DATA_LEN][plain] = lens[ev_rows][plain]
        net = self._net(net_rec, payload.filter(pa.array(is_net)) if payload is not None else None)
        return Records(events, net)

    def _net(self, rec: Array, payload: pa.Array | None) -> NetRecords:
        if not len(rec):
            return NetRecords.empty(self.layout.net)
        width = rec.dtype.itemsize
        pay = binary_matrix(payload, 1 << 16, PAYLOAD) if payload is not None else None
        plen = (
            np.diff(
                np.frombuffer(payload.buffers()[1], np.int64)[
                    payload.offset : payload.offset + len(rec) + 1
                ]
            )
            if payload is not None
            else np.zeros(len(rec), np.int64)
        )
        size = width + plen
        start = np.cumsum(size) - size
        data = np.zeros(int(size.sum()), np.uint8)
        data[start[:, None] + np.arange(width)] = rec.view(np.uint8).reshape(len(rec), width)
        if pay is not None and plen.sum():
            rows = np.repeat(np.arange(len(rec)), plen)
            cols = np.arange(int(plen.sum())) - np.repeat(np.cumsum(plen) - plen, plen)
            data[np.repeat(start + width, plen) + cols] = pay[rows, cols]
        return NetRecords(rec, data.tobytes(), start, size.astype(np.int64))

    def check_schema(self, schema: pa.Schema) -> list[str]:
        """A recording's schema against this layout's: a column this layout does not
        have, or has with another type, is a :class:`RecordingError` (the records
        cannot be made without loss); the columns it lacks are returned (read as zeros)."""
        mine = {f.name: f.type for f in self.schema}
        for f in schema:
            if f.name not in mine:
                raise RecordingError(
                    f"column {f.name!r} is not in this ringtool's event "
                    "layout: read it with the ringtool that recorded it"
                )
            if f.type != mine[f.name]:
                raise RecordingError(
                    f"column {f.name!r} is {f.type} in the recording, "
                    f"{mine[f.name]} in this ringtool's event layout: read "
                    "it with the ringtool that recorded it"
                )
        return [n for n in mine if n not in schema.names]


__all__ = ["PAYLOAD", "TIME", "TYPE", "TYPE_ID", "Member", "RecordSchema", "binary_matrix"]
