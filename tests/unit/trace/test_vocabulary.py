"""One vocabulary: every field has one name and one value in JSON, CSV, the ``--fields``
columns and the default columns (whose headers are the fields' names upper-cased, and
which ``--fields`` takes); every ``--json`` line (events of every type, start, note,
stats, summary, hist) validates against the committed JSON Schema, and the committed
schema files are what the generator writes from the field tables."""

from __future__ import annotations

import csv
import io
import json
import socket
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ringtool.cli.validate import name_list
from ringtool.event.decode import Decoder
from ringtool.event.fields import FIELD_NAMES, field_name
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.event.value_text import clock_texts, field_text
from ringtool.trace.reading.latency_buckets import bucket_of
from ringtool.trace.reading.sources import ALL_EVENTS
from ringtool.trace.report.hist import hist_records
from ringtool.trace.report.schema import markdown, schema_text
from ringtool.trace.report.stats_json import stats_record, summary_record
from ringtool.trace.writers.output_columns import HEADER, ColumnOutput
from ringtool.trace.writers.output_fields import CsvOutput, FieldColumnOutput, cell
from ringtool.trace.writers.output_json import JsonOutput
from tests.helpers.json_schema import SCHEMA_PATH, check_lines
from tests.helpers.net_records import net_event_records
from tests.helpers.records import SETTINGS, record, record_array
from tests.helpers.stats import new_stats

LAYOUT = load_layout()
DECODER = Decoder(LAYOUT, realtime_offset_ns=1_763_000_000 * 10**9)
#: a packet as TC sees it: no task (pid 0, no comm)
NET = {"type": "net", "ts": 1.5, "cpu": 1, "pid": 0, "tid": 0, "comm": "", "cgroup": 0,
       "src": "10.0.0.1", "dst": "10.0.0.2", "sport": 1, "dport": 2, "proto": "tcp",
       "len": 60, "ifindex": 1, "dir": "egress", "captured": 0}  # fmt: skip


def _typed(name: str, n: int = 1) -> np.ndarray[Any, Any]:
    arr = np.zeros(n, dtype=LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id(name)
    arr["h"]["pid"] = arr["h"]["tid"] = 4242
    arr["h"]["ts"] = 10**9
    arr["h"]["comm"] = b"worker"
    arr["uid"] = arr["gid"] = 1000
    return arr


def mixed() -> Records:
    """One record of every type: exec, exit, fork, open, syscall, mark, tcp, and a packet."""
    parts = {name: _typed(name) for name in ("exec", "exit", "fork", "open", "syscall", "mark")}
    parts["exec"]["data"] = b"/bin/true\0true\0-x\0"
    parts["exec"]["aux2"] = 2
    parts["exit"]["value"], parts["exit"]["aux"] = 3 << 8, 1
    parts["fork"]["aux"], parts["fork"]["data"] = 4243, b"worker"
    parts["open"]["data"], parts["open"]["ret"] = b"/etc/hosts", 3
    parts["syscall"]["aux"], parts["syscall"]["value"] = 35, 20_000_000  # nanosleep, 20 ms
    parts["mark"]["data"] = b"checkpoint"
    tcp = _typed("tcp")
    rec = tcp.view(LAYOUT.views[LAYOUT.type_id("tcp")])
    rec["family"], rec["sport"], rec["dport"], rec["active"] = 4, 40000, 80, 1
    for col, addr in (("saddr", "127.0.0.1"), ("daddr", "127.0.0.2")):
        rec[col] = np.frombuffer(b"\0" * 10 + b"\xff\xff" + socket.inet_aton(addr), np.uint8)
    rec["duration_ns"], rec["states"] = 1_234_567, 0b10110110
    events = np.concatenate([*parts.values(), tcp])
    return Records(events, net_event_records([NET], DECODER.offset_ns))


def _json_events(records: Records, fields: list[str] | None = None) -> list[dict[str, Any]]:
    buf = io.StringIO()
    JsonOutput(buf, DECODER, fields, err=io.StringIO()).batch(records)
    return check_lines(buf.getvalue().splitlines(), partial=fields is not None)


def test_every_type_has_the_same_names_and_values_in_json_csv_and_columns() -> None:
    records = mixed()
    events = _json_events(records)
    assert {e["type"] for e in events} == {"exec", "exit", "fork", "open", "syscall", "mark",
                                           "tcp", "net"}  # fmt: skip
    buf = io.StringIO(newline="")
    out = CsvOutput(buf, DECODER, None, err=io.StringIO())
    out.start(list(ALL_EVENTS), [])  # every source: the CSV has every field
    out.batch(records)
    rows = list(csv.reader(io.StringIO(buf.getvalue(), newline="")))
    assert rows[0] == list(FIELD_NAMES)  # the JSON keys, each under its one name
    for ev, row in zip(events, rows[1:], strict=True):
        got = {k: v for k, v in zip(rows[0], row, strict=True) if k in ev}
        assert got == {k: "" if v is None else str(cell(v)) for k, v in ev.items()}
        assert all(v == "" for k, v in zip(rows[0], row, strict=True) if k not in ev)
    for key in FIELD_NAMES:  # one --fields column at a time: the line is the cell
        text = io.StringIO()
        cols = FieldColumnOutput(text, DECODER, [key], None, io.StringIO())
        cols.start([], [])
        cols.batch(records)
        head, *lines = text.getvalue().splitlines()
        assert head == key.upper()
        want = [
            "-" if key not in ev or ev[key] is None
            else clock_texts(np.array([ev[key]]), False)[0] if key == "ts"
            else printable(field_text(key, cell(ev[key])))  # flags by name, errno named
            for ev in events
        ]  # fmt: skip
        assert [line.rstrip() for line in lines] == [w.rstrip() for w in want], key


def test_the_default_columns_name_and_show_what_json_does() -> None:
    records = mixed()
    events = _json_events(records)
    text = io.StringIO()
    out = ColumnOutput(text, DECODER, None, io.StringIO())
    out.start([], [])
    out.batch(records)
    head, *lines = text.getvalue().splitlines()
    names = head.split()
    assert names == HEADER.split() == ["TS", "CPU", "PID", "UID", "COMM", "TYPE", "DETAIL"]
    parse = name_list(FIELD_NAMES, field_name)
    assert parse(",".join(names[:-1])) == ("ts", "cpu", "pid", "uid", "comm", "type")
    for ev, line in zip(events, lines, strict=True):
        cells = line.split()
        shown = dict(zip(names[1:6], cells[1:6], strict=True))
        assert shown == {"CPU": str(ev["cpu"]), "PID": str(ev["pid"]),
                         "UID": str(ev.get("uid", "-")), "COMM": ev["comm"],
                         "TYPE": ev["type"]}  # fmt: skip
    net = next(e for e in events if e["type"] == "net")
    assert net["comm"] == "[net]"  # a packet has no task: one label in every output
    assert "egress tcp 10.0.0.1:1 > 10.0.0.2:2" in lines[events.index(net)]


def test_fields_takes_the_names_and_the_headers() -> None:
    parse = name_list(FIELD_NAMES, field_name)
    assert parse("TS,type,Comm,latency_us,LATENCY_US") == ("ts", "type", "comm", "latency_us")


@SETTINGS
@given(records=st.lists(record.filter(lambda r: 1 <= r[0] <= 5), max_size=12),
       fields=st.one_of(st.none(), st.lists(st.sampled_from(FIELD_NAMES), min_size=1,
                                            max_size=6, unique=True)))  # fmt: skip
def test_every_json_line_of_hostile_records_validates(
    records: list[tuple[Any, ...]], fields: list[str] | None
) -> None:
    batch = mixed()
    hostile = Records(np.concatenate([record_array(records), batch.events]), batch.net)
    _json_events(hostile, fields)  # check_lines raises on a line that does not validate


def test_start_note_stats_summary_and_hist_lines_validate() -> None:
    st_ = new_stats(syscall_name={35: "nanosleep"}.get)  # type: ignore[arg-type]
    st_.tick(syscall_hist={35: {bucket_of(20_000_000): 3}}, now=1.0)
    out, err = io.StringIO(), io.StringIO()
    j = JsonOutput(out, DECODER, err=err, stats_lines=True)  # --stats
    j.start(["exec", "open", "syscalls"], ["a note"])
    j.note("another")
    j.stats(st_)
    j.summary(st_)
    lines = [*err.getvalue().splitlines(), *out.getvalue().splitlines(),
             *(json.dumps(r) for r in hist_records(st_))]  # fmt: skip
    objs = check_lines(lines)
    assert [o["type"] for o in objs] == ["start", "note", "stats", "summary", "hist"]
    assert objs[-1]["p99_us"] > 1000  # 20 ms: microseconds, as latency_us
    assert set(stats_record(st_)) <= set(json.loads(SCHEMA_PATH.read_text())["$defs"]["stats"]
                                          ["properties"])  # fmt: skip
    assert summary_record(st_)["type"] == "summary"


def test_the_committed_schema_files_are_what_the_generator_writes() -> None:
    """docs/schema.md and docs/trace-events.schema.json come from the field tables:
    after a change there, run scripts/gen_schema.py."""
    assert SCHEMA_PATH.read_text() == schema_text()
    assert (SCHEMA_PATH.parent / "schema.md").read_text() == markdown()
