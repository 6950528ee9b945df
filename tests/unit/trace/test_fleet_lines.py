"""``collect --record``'s JSON lines back into records (ringtool/trace/writers/fleet_lines.py,
ringtool/event/line_records.py): the lines the encoder writes for any records come
back, byte for byte, from the records they become; every other line is counted by its
reason, never raised, never written."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.decode import Decoder
from ringtool.event.json_lines import batch_text
from ringtool.event.layout import load_layout
from ringtool.event.line_columns import line_checks, line_fits, line_schema, parse_lines
from ringtool.event.line_records import times_1000
from ringtool.event.records import NetRecords, Records
from ringtool.event.syscalls import syscall_namer
from ringtool.trace.writers import fleet_lines as fl
from tests.helpers.busy_records import disk_records, tcp_records
from tests.helpers.net_records import net_sample
from tests.helpers.records import OFFSETS, SETTINGS, record, record_array

LAYOUT = load_layout()
NAMER = syscall_namer()
KNOWN = [
    c for c, name in LAYOUT.type_names.items() if name != "net"
]  # every struct trace_event type


def lines_of(records: Records, offset: int) -> list[str]:
    return batch_text(Decoder(LAYOUT, NAMER, realtime_offset_ns=offset), records, None).split("\n")[
        :-1
    ]


def back(got: fl.Converted, offset: int) -> list[str]:
    return lines_of(got.records, offset)


def convert(kind: str, lines: list[str], offset: int = OFFSETS[1]) -> fl.Converted:
    return fl.LineRecords(LAYOUT, NAMER).convert(kind, lines, offset)


@SETTINGS
@given(st.lists(record, min_size=1, max_size=12), st.sampled_from(KNOWN),
       st.sampled_from(OFFSETS))  # fmt: skip
def test_any_records_lines_come_back_byte_for_byte(rows: list[Any], code: int, offset: int) -> None:
    arr = record_array(rows)
    arr["h"]["type"] = code
    kind = LAYOUT.type_names[code]
    lines = lines_of(Records(arr), offset)
    got = convert(kind, lines, offset)
    assert got.rejected == {} and got.non_event == {}
    assert back(got, offset) == lines


@given(st.lists(st.tuples(st.sampled_from(["10.1.0.1", "fd00::2", "192.168.7.255", "::1"]),
                          st.integers(0, 65535), st.integers(0, 2**64 - 1),
                          st.binary(max_size=15)), min_size=1, max_size=20))  # fmt: skip
def test_tcp_and_disk_lines_come_back(conns: list[tuple[str, int, int, bytes]]) -> None:
    tcp = tcp_records([(a, p, a, p ^ 1, n, n >> 3, n % 2**32, c) for a, p, n, c in conns])
    t = tcp.view(LAYOUT.views[LAYOUT.type_id("tcp")])
    t["states"], t["duration_ns"] = [n & 0xFFFF for _, _, n, _ in conns], [n for *_, n, _ in conns]
    disk = disk_records([(p % 300, n % 2**20, p, n % 10**12) for _, p, n, _ in conns])
    d = disk.view(LAYOUT.views[LAYOUT.type_id("disk")])
    d["rwbs"], d["queue_ns"] = [[b"FWS", b"R", b"DE", b""][p % 4] for _, p, _, _ in conns], 1999
    for kind, arr in (("tcp", tcp), ("disk", disk)):
        lines = lines_of(Records(arr), OFFSETS[1])
        got = convert(kind, lines)
        assert got.rejected == {} and back(got, OFFSETS[1]) == lines, kind


def test_packets_come_back() -> None:
    pairs = [("10.0.0.1", "10.0.0.2", 6), ("fd00::1", "::1", 17), ("", "", 0),
             ("1.2.3.4", "5.6.7.8", 200)]  # fmt: skip
    samples = [net_sample(ts=10**12 + i, cpu=i % 2, src=s, dst=d, sport=i, dport=443, proto=p,
                          dir=i % 2, len=60 + i, ifindex=2, payload=b"x" * (i % 3))
               for i, (s, d, p) in enumerate(pairs)]  # fmt: skip
    net = NetRecords.from_samples(LAYOUT.net, LAYOUT.type_id("net"), list(enumerate(samples)))
    lines = lines_of(Records(np.empty(0, LAYOUT.event), net), OFFSETS[1])
    got = convert("net", lines)
    assert got.rejected == {} and back(got, OFFSETS[1]) == lines


def _open_lines(n: int) -> list[str]:
    arr = np.zeros(n, LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id("open")
    arr["h"]["ts"] = 10**13 + np.arange(n) * 1_000_003
    arr["h"]["pid"] = 4242
    arr["h"]["comm"] = b"cat"
    arr["data"] = [f"/etc/f{i}".encode() for i in range(n)]
    arr["call"] = 2
    return lines_of(Records(arr), OFFSETS[1])


def _edit(line: str, **change: Any) -> str:
    obj = json.loads(line)
    obj.update(change)
    return json.dumps(obj)


def _drop(line: str, key: str) -> str:
    obj = json.loads(line)
    del obj[key]
    return json.dumps(obj)


def _ts(line: str, text: str) -> str:
    return line.replace(f'"ts": {json.loads(line)["ts"]!r}', f'"ts": {text}')


GOOD = _open_lines(3)
#: Hostile or malformed lines in an ``open`` message, and why each is not recorded.
HOSTILE = [
    ("not json at all", fl.NOT_JSON),
    ("", fl.NOT_JSON),
    ("[1, 2]", fl.NOT_JSON),
    (_ts(GOOD[0], "NaN"), fl.BAD_VALUE),  # pyarrow reads NaN: not a time
    (_ts(GOOD[0], "1e400"), fl.NOT_JSON),  # beyond a double
    ("[" * 100_000 + "]" * 100_000, fl.NOT_JSON),
    (GOOD[0][:-5], fl.NOT_JSON),  # cut short
    (_edit(GOOD[0], type="exec"), fl.NOT_OF_TYPE),
    (_edit(GOOD[0], type="open\u202e"), fl.NOT_OF_TYPE),
    (_edit(GOOD[0], pid="4242"), fl.BAD_FIELD),
    (_edit(GOOD[0], extra=1), fl.BAD_FIELD),
    (_edit(GOOD[0], path=["/etc"]), fl.BAD_FIELD),
    (_edit(GOOD[0], pid=2**40), fl.BAD_VALUE),
    (_edit(GOOD[0], ret=-(2**40)), fl.BAD_VALUE),
    (_edit(GOOD[0], path="/" * 300), fl.BAD_VALUE),
    (_edit(GOOD[0], comm="a" * 17), fl.BAD_VALUE),
    (_edit(GOOD[0], syscall="openat3"), fl.BAD_VALUE),
    (_drop(GOOD[0], "ret"), fl.BAD_VALUE),
    (_edit(GOOD[0], ts=-1e300), fl.BAD_VALUE),
    (_edit(GOOD[0], comm="a\u0000b"), fl.NOT_EXACT),  # a NUL ends a C string
    (GOOD[0] + "\r" + GOOD[1], fl.NOT_JSON),  # two objects in a line
    (GOOD[0].replace(", ", ",\r "), None),  # a carriage return is JSON white space
    (GOOD[0] + " " + GOOD[1], fl.NOT_JSON),
    (_edit(GOOD[0], path="\\xc3\\xa9", comm="\x1b[2J"), None),  # text, and escapes: kept
]


@pytest.mark.parametrize(("line", "reason"), HOSTILE)
def test_a_bad_line_is_counted_by_its_reason_and_the_others_recorded(
    line: str, reason: str | None
) -> None:
    lines = [GOOD[1], line, GOOD[2]]
    got = convert("open", lines)
    if reason is None:  # a line of other text with the same values: recorded
        assert got.rejected == {} and len(got.records) == 3
        assert json.loads(back(got, OFFSETS[1])[1]) == json.loads(line)
        return
    assert got.rejected == {reason: 1}
    assert back(got, OFFSETS[1]) == [GOOD[1], GOOD[2]]


def test_derived_values_that_disagree_are_not_recorded() -> None:
    tcp = lines_of(Records(tcp_records([("10.1.0.1", 1, "10.9.0.9", 443, 5, 6, 7, b"curl")])),
                   OFFSETS[1])[0]  # fmt: skip
    assert json.loads(tcp)["failed"] is False
    got = convert("tcp", [tcp, _edit(tcp, failed=True), _edit(tcp, states=["NOPE"])])
    assert got.rejected == {fl.NOT_EXACT: 1, fl.BAD_VALUE: 1}
    assert back(got, OFFSETS[1]) == [tcp]


def test_non_event_lines_are_counted_by_kind() -> None:
    lines = [GOOD[0], json.dumps({"type": "stats", "events": 3}), '{"type": "summary"}', GOOD[1]]
    got = convert("open", lines)
    assert got.non_event == {"stats": 1, "summary": 1} and got.rejected == {}
    assert back(got, OFFSETS[1]) == GOOD[:2]


def test_a_message_of_no_event_type_records_nothing() -> None:
    got = convert("stats", [GOOD[0], '{"type": "stats"}'])
    assert len(got.records) == 0
    assert got.rejected == {fl.NOT_OF_TYPE: 1} and got.non_event == {"stats": 1}


@given(st.lists(st.one_of(st.sampled_from(GOOD), st.text(max_size=60),
                          st.sampled_from([h for h, _ in HOSTILE])),
                min_size=1, max_size=10))  # fmt: skip
def test_every_line_is_recorded_or_counted(lines: list[str]) -> None:
    lines = [line.replace("\n", " ") for line in lines]  # one line each
    got = convert("open", lines)
    out = back(got, OFFSETS[1])
    assert len(out) + sum(got.rejected.values()) + sum(got.non_event.values()) == len(lines)
    assert set(got.rejected) <= set(fl.REASONS)
    it = iter(lines)  # what is recorded is, in order, lines it was sent (their values)
    assert all(any(json.loads(line) == _value(sent) for sent in it) for line in out)


def _value(line: str) -> Any:
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def test_the_line_schema_has_a_fixed_arrow_type_per_key() -> None:
    for kind in LAYOUT.type_names.values():
        schema = line_schema(LAYOUT, kind)
        assert schema.names[0] == "type" and len(set(schema.names)) == len(schema.names)
    assert str(line_schema(LAYOUT, "open").field("cgroup").type) == "uint64"
    assert str(line_schema(LAYOUT, "exec").field("argv").type) == "list<item: string>"


@given(st.lists(st.one_of(st.integers(0, 2**64 - 1), st.integers(0, 10**7)), min_size=1))
def test_a_latency_in_tenths_of_us_has_a_u64_of_ns_that_writes_it(ns: list[int]) -> None:
    us = [round(v / 1000, 1) for v in ns]  # what the encoder writes (latency_us)
    back_ns = times_1000(np.array(us)).tolist()
    assert [round(v / 1000, 1) for v in back_ns] == us


@pytest.mark.parametrize("sep", ["\r", " ", ""])
def test_two_objects_in_a_line_and_an_empty_line_are_not_taken_for_two_lines(sep: str) -> None:
    # pyarrow reads both objects as rows and none of the empty line: as many rows as
    # lines, but not one for one
    got = convert("open", [GOOD[0] + sep + GOOD[1], "", GOOD[2]])
    assert got.rejected == {fl.NOT_JSON: 2}
    assert back(got, OFFSETS[1]) == [GOOD[2]]


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=5),
    st.floats(allow_nan=False, allow_infinity=False),
    st.integers(-(2**64), 2**64),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1]),
    st.lists(st.one_of(st.none(), st.text(max_size=3), st.integers()), max_size=3),
)


@SETTINGS
@given(st.sampled_from(sorted(LAYOUT.type_names.values())),
       st.dictionaries(st.sampled_from(["type", "ts", "pid", "cgroup", "comm", "argv", "active",
                                        "latency_us", "states", "nope", "path", "flags"]),
                       _VALUES, max_size=6))  # fmt: skip
def test_a_line_the_check_lets_through_is_one_row_for_pyarrow(
    kind: str, obj: dict[str, Any]
) -> None:
    schema = line_schema(LAYOUT, kind)
    if line_fits(obj, line_checks(schema)):
        assert parse_lines((json.dumps(obj) + "\n").encode(), schema).num_rows == 1
