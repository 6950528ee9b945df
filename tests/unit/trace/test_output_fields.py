"""``--csv`` and ``--fields``: what is written reads back (csv module, json.loads) as
the decoded event dicts restricted to the chosen fields, in their order, for random
record batches with hostile bytes (the generator of tests/helpers/records.py)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.decode import Decoder, Event
from ringtool.event.fields import FIELD_NAMES
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.event.registry import EVENT_TYPES
from ringtool.trace.writers.output_fields import CsvOutput, FieldColumnOutput
from ringtool.trace.writers.output_json import JsonOutput
from tests.helpers.net_records import net_event_records
from tests.helpers.records import OFFSETS, SETTINGS, record, record_array

LAYOUT = load_layout()
#: a packet of a TCP connection the tcp source follows: its owner's pid, ..., uid
NET: Event = {
    "type": "net", "ts": 1.5, "cpu": 0, "pid": 4242, "tid": 4243, "comm": 'a,"b"\r\n',
    "cgroup": 7, "uid": 1000, "src": "10.0.0.1", "dst": "10.0.0.2", "sport": 1, "dport": 2,
    "proto": "tcp", "len": 60, "ifindex": 1, "dir": "egress", "captured": 0, "ts_ns": 1,
    "payload": b"", "raw": b"",
}  # fmt: skip
#: Every source: the default CSV columns are every field.
ALL_SOURCES = sorted({t.source for t in EVENT_TYPES})
keys_st = st.one_of(
    st.none(),
    st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=8, unique=True),
)


def _cell(v: Any) -> str:
    """What a CSV cell holds for the value ``v`` (None and missing: empty; a list, an
    exec's argv, as JSON; a boolean as JSON's true/false)."""
    if isinstance(v, list):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else str(v)


@SETTINGS
@given(records=st.lists(record, max_size=16), offset=st.sampled_from(OFFSETS), keys=keys_st)
def test_csv_reads_back_as_the_event_dicts(
    records: list[tuple[Any, ...]], offset: int, keys: list[str] | None
) -> None:
    arr = record_array(records)
    decoder = Decoder(LAYOUT, realtime_offset_ns=offset)
    buf, err = io.StringIO(newline=""), io.StringIO()
    out = CsvOutput(buf, decoder, keys, err=err)
    out.start(ALL_SOURCES, ["a note\x1b[2J"])
    out.batch(Records(arr, net_event_records([NET], offset)))
    out.batch(Records(arr[:0]))
    text = buf.getvalue()
    rows = list(csv.reader(io.StringIO(text, newline="")))
    names = keys or list(FIELD_NAMES)
    assert rows[0] == names
    events = [*decoder.decode(arr), NET]
    assert rows[1:] == [[_cell(ev.get(k)) for k in names] for ev in events]
    assert text.count("\r\n") >= len(events) + 1  # CRLF line ends
    assert err.getvalue() == "note: a note\\x1b[2J\n"  # not in the CSV, printable


def test_csv_columns_are_those_of_the_running_sources_types() -> None:
    """``--events net`` writes the packets' columns (and the markers'), not all 45."""
    buf = io.StringIO(newline="")
    out = CsvOutput(buf, Decoder(LAYOUT, realtime_offset_ns=0), None, err=io.StringIO())
    out.start(["net"], [])
    out.batch(Records(record_array([]), net_event_records([NET])))
    rows = list(csv.reader(io.StringIO(buf.getvalue(), newline="")))
    net = ["src", "dst", "sport", "dport", "proto", "len", "ifindex", "dir", "captured"]
    # uid: a packet's owner's too; gid: a marker's (any trace receives markers), empty
    # in a packet's row
    assert rows[0] == ["type", "ts", "cpu", "pid", "tid", "comm", "cgroup", "uid", "gid",
                       *net, "text"]  # fmt: skip
    assert rows[1] == [_cell(NET.get(k)) for k in rows[0]]


@SETTINGS
@given(records=st.lists(record, max_size=16), offset=st.sampled_from(OFFSETS), keys=keys_st)
def test_json_fields_are_the_dicts_restricted_in_order(
    records: list[tuple[Any, ...]], offset: int, keys: list[str] | None
) -> None:
    arr = record_array(records)
    decoder = Decoder(LAYOUT, realtime_offset_ns=offset)
    buf = io.StringIO()
    JsonOutput(buf, decoder, keys).batch(Records(arr, net_event_records([NET], offset)))
    lines = buf.getvalue().splitlines()
    assert all(line.isprintable() for line in lines)
    objs = [json.loads(line) for line in lines]
    private = ("ts_ns", "payload", "raw")
    events = [*decoder.decode(arr), {k: v for k, v in NET.items() if k not in private}]
    want = [{k: ev[k] for k in (keys or ev) if k in ev} for ev in events]
    assert objs == want
    assert [list(o) for o in objs] == [list(w) for w in want]  # the order of --fields


@SETTINGS
@given(
    records=st.lists(record, min_size=1, max_size=16),
    keys=st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=8, unique=True),
    width=st.sampled_from([None, 80]),
)
def test_field_columns_are_printable_one_line_per_event(
    records: list[tuple[Any, ...]], keys: list[str], width: int | None
) -> None:
    arr = record_array(records)
    buf, err = io.StringIO(), io.StringIO()
    out = FieldColumnOutput(buf, Decoder(LAYOUT, realtime_offset_ns=0), keys, width, err)
    out.start(["open"], [])
    out.batch(Records(arr, net_event_records([NET])))
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1 + len(arr) + 1  # stdout: the header and the events only
    assert err.getvalue().splitlines() == ["sources: open", "Tracing... Ctrl-C to end."]
    names = " ".join(k.upper() for k in keys)  # the fields' own names: ts is TS
    assert " ".join(lines[0].split()) == names if width is None else len(lines[0]) <= width
    assert all(line.isprintable() for line in lines), lines
    assert width is None or all(len(line) <= width for line in lines)


def test_csv_quotes_what_would_break_a_row() -> None:
    arr = record_array([(4, 1, 7, b"c,o", b'/t/a"b\nc\r,d', b"", 0, 3, 0)])
    buf = io.StringIO(newline="")
    out = CsvOutput(buf, Decoder(LAYOUT, realtime_offset_ns=0), ["pid", "comm", "path"])
    out.start([], [])
    out.batch(Records(arr))
    assert buf.getvalue() == 'pid,comm,path\r\n7,"c,o","/t/a""b\nc\r,d"\r\n'
