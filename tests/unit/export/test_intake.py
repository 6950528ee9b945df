"""What ``collect`` lets in, without a broker: whatever a message holds (any subject,
headers, body, size, nesting, numbers, bytes), the collector counts it as taken or as
refused with a reason, never raises, keeps its outputs valid JSON with the verified
host once, its memory bounded, and the table free of terminal escapes."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringtool.export.wire import H_CLOCK, H_DATA_LEN, H_HOST, ROWS, Origin
from tests.helpers.collect import (
    HEADER_NAMES,
    Fed,
    Msg,
    events,
    good_stats,
    headers,
    stats,
    strict_json,
)

NASTY_NUMBERS = ["0", "-1", "1", "2-1", "1-", "-", "1e300", "inf", "nan", "Infinity",
                 str(10**30), str(2**63), "1-" + str(2**64), "0x10", " 1", "1\n", "٣",
                 "9" * 5000]  # fmt: skip
NASTY_TEXT = ["web1", "web2", "", "a.b", "*", ">", "\x1b]0;owned\x07", "\x1b[2J", "\u202e",
              "x" * 300, "stats", "open", "jsonl/1", "rows/1", "stats/1", "\udcff"]  # fmt: skip


def deep(n: int) -> bytes:
    return b"[" * n + b"]" * n


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20,
)  # fmt: skip
header_values = st.sampled_from(NASTY_NUMBERS + NASTY_TEXT) | st.text(max_size=40)
bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.lists(json_values.map(json.dumps), max_size=4).map(
        lambda ls: "".join(x + "\n" for x in ls).encode()),
    st.sampled_from([b'{"ts": Infinity}\n', b'{"ts": 1e300}\n', b'{"ts": NaN}\n',
                     b'{"ts": 1e400}\n', b'{"ts": 1, "x": 1e400}\n', b'{"host": "web9", "ts": 1}\n',
                     b'{"ts": 1, "ts": 2}\n', b"{}\n", b"[]\n", b"\xff\xfe\n", deep(100_000),
                     b'{"dropped": "many"}', b'{"dropped": 1e400}', b'{"dropped": null}',
                     b'{"exported": 999999999999999999999}', b'{"kind": "summary", "lost": -5}',
                     b'{"host": "web9"}', b"\x00" * 200]),
)  # fmt: skip


@st.composite
def messages(draw: Any) -> Msg:
    """A message built from a well-formed one by replacing, dropping or adding headers,
    and a subject and body that may be anything."""
    host = draw(st.sampled_from(["web1", "web2", "db1"]))
    kind = draw(st.sampled_from(["open", "exec", "net", "stats", "bogus"]))
    fmt = draw(st.sampled_from(["jsonl/1", "rows/1", "stats/1", "xml/9"]))
    h: dict[str, str] | None = headers(host, kind, fmt=fmt)
    if fmt == ROWS:
        h[H_DATA_LEN] = draw(st.sampled_from(["0", "8", "64", "256", "-8", "99999"]))
    for name in draw(st.lists(st.sampled_from([*HEADER_NAMES, "Other"]), max_size=4)):
        if draw(st.booleans()):
            h.pop(name, None)
        else:
            h[name] = draw(header_values)
    if draw(st.integers(0, 20)) == 0:
        h = None
    subjects = [
        f"ringtool.{host}.{kind}",
        f"ringtool.web1.{kind}",
        "ringtool.evil.open",
        "ringtool.a.b.c",
        "ringtool",
        "other.web1.open",
        "ringtool.\x1b[2J.open",
    ]
    subject = draw(st.sampled_from(subjects) | st.text(max_size=30))
    return Msg(subject, h, draw(bodies))


def check_outputs(fed: Fed, taken: int) -> None:
    """The invariants every run of the collector keeps (module doc)."""
    fleet = fed.fleet
    assert fleet.messages + fleet.bad == taken
    assert sum(fleet.bad_reasons.values()) == fleet.bad
    assert len(fed.notes) == len(fleet.bad_reasons)  # one line per reason, said once
    for note in fed.notes:
        assert note.isprintable(), note
    lines = fed.close()
    for line in lines:
        obj = strict_json(line)
        if obj.get("type") in ("summary", "fleet"):
            continue
        if "host" in obj:
            assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", obj["host"]), obj["host"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(messages(), min_size=1, max_size=6), st.sampled_from(["json", "merged"]))
def test_any_message_is_taken_or_refused(msgs: list[Msg], mode: str) -> None:
    fed = Fed(mode)
    fed.take(*msgs)
    assert "undecodable" not in fed.fleet.bad_reasons, fed.notes  # every case foreseen
    check_outputs(fed, len(msgs))
    for host, view in fed.fleet.hosts.items():
        assert view.host == host


@settings(max_examples=100, deadline=None)
@given(st.lists(messages(), min_size=1, max_size=4))
def test_table_never_writes_escapes(msgs: list[Msg]) -> None:
    fed = Fed("table")
    fed.take(*msgs, events("web1", 1, [1.0]))
    text = "".join(fed.close())
    assert all(ch.isprintable() for ch in text), repr(text)


# --- the audit's cases, one by one ---------------------------------------------------


@pytest.mark.parametrize("body, reason", [
    (b'{"type": "open", "ts": Infinity}\n', "bad body"),
    (b'{"type": "open", "ts": 1e300}\n', "bad body"),
    (b'{"type": "open", "ts": 1, "x": 1e400}\n', "bad body"),
    (b"[" * 100_000 + b"]" * 100_000 + b"\n", "bad body"),
])  # fmt: skip
@pytest.mark.parametrize("mode", ["json", "merged"])
def test_poison_event_lines(body: bytes, reason: str, mode: str) -> None:
    fed = Fed(mode)
    msg = Msg("ringtool.web1.open", headers("web1"), body)
    fed.take(msg, events("web1", 2, [5.0]))
    assert fed.fleet.bad_reasons == {reason: 1}
    assert fed.fleet.hosts["web1"].events == 1  # the next message is taken
    check_outputs(fed, 2)


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("counter", ['"many"', "1e400", "null", "-1", "1.5", "true",
                                     "9007199254740993", DEEP])  # fmt: skip
def test_poison_stats(counter: str) -> None:
    fed = Fed()
    body = f'{{"kind": "stats", "host": "web1", "dropped": {counter}}}'.encode()
    fed.take(stats("web1", body), stats("web1", good_stats("web1", dropped=3)))
    assert fed.fleet.bad_reasons == {"bad stats": 1}
    assert fed.fleet.records()[0]["dropped"] == 3


@pytest.mark.parametrize("offset", [str(10**30), str(-(10**30)), "1e18", "x"])
def test_poison_realtime_offset(offset: str) -> None:
    fed = Fed("merged")
    fed.take(events("web1", 1, [1.0], **{H_CLOCK: offset}), events("web1", 2, [2.0]))
    assert fed.fleet.bad_reasons == {"bad header": 1}
    assert fed.fleet.hosts["web1"].events == 1


def test_subject_names_the_host() -> None:
    fed = Fed("merged")
    forged = events("web1", 1, [1.0])
    forged.subject = "ringtool.evil.open"  # evil's subject, web1's headers
    forged_stats = stats("evil", good_stats("web1", exported=999_999_999), **{H_HOST: "evil"})
    forged_seq = events("web1", 50_000_000, [2.0])
    forged_seq.subject = "ringtool.evil.open"
    line_claim = Msg("ringtool.evil.open", headers("evil"),
                     b'{"host": "web1", "type": "open", "ts": 3.0}\n')  # fmt: skip
    wrong_type = events("web1", 1, [1.0])
    wrong_type.subject = "ringtool.web1.stats"
    fed.take(forged, forged_stats, forged_seq, line_claim, wrong_type, events("web1", 1, [4.0]))
    assert fed.fleet.bad_reasons == {"forged origin": 5}
    assert list(fed.fleet.hosts) == ["web1"]
    web1 = fed.fleet.records()[0]
    assert web1["events"] == 1 and web1["gaps"] == 0 and web1["exported"] == 0
    assert len(fed.notes) == 1 and "forged origin" in fed.notes[0]


def test_merged_lines_carry_the_verified_host_once() -> None:
    fed = Fed("merged")
    body = (b'{"host": "web1", "type": "open", "ts": 1.0}\n{"ts": 2.0}\n'
            b'{"type": "open", "ts": 3.0, "ts": 4.0}\n')  # fmt: skip
    fed.take(Msg("ringtool.web1.open", headers("web1", count=3), body))
    lines = fed.close()
    rows = [strict_json(line) for line in lines]  # (the summary goes to stderr)
    assert [next(iter(r)) for r in rows] == ["host"] * 3
    assert [r["host"] for r in rows] == ["web1"] * 3
    assert [r["ts"] for r in rows] == [1.0, 2.0, 4.0]
    assert fed.fleet.bad == 0


def test_made_up_host_names_are_bounded() -> None:
    fed = Fed(max_hosts=100)
    fed.take(*(events(f"h{i}", 1, [1.0]) for i in range(2_000)))
    assert len(fed.fleet.hosts) == 100
    assert fed.fleet.bad_reasons == {"over a limit": 1_900}
    summary = fed.close()[-1]
    assert len(summary) < 100 * 600  # about 450 bytes a host, none past the bound


def test_table_shows_escape_sequences_as_text() -> None:
    fed = Fed("table")
    evil = events("web1", 1, [1.0])
    evil.subject = "ringtool.\x1b]0;owned\x07.open"
    fed.take(evil, events("web1", 2, [1.0]))
    text = "\n".join(fed.close())
    assert "\x1b" not in text and "\x07" not in text
    assert "refused 1 messages: bad subject 1" in text
    assert "\x1b" not in fed.notes[0] and "\\x1b]0;owned\\x07" in fed.notes[0]


def test_msg_ids_are_not_guessable() -> None:
    a = Origin("web1", "boot", "run1", "trace", 0)
    b = Origin("web1", "boot", "run1", "trace", 0)  # same run id: another secret
    assert a.msg_id("open:0:2049") == a.msg_id("open:0:2049")  # a resend: the same id
    assert a.msg_id("open:0:2049") != b.msg_id("open:0:2049")
    assert a.msg_id("open:0:2049").startswith("web1:run1:")
    assert "2049" not in a.msg_id("open:0:2049")


def _rows_width(data_len: int) -> int:
    from ringtool.event.layout import load_layout

    dtype = load_layout().event
    return int(dtype.fields["data"][1]) + data_len  # type: ignore[index]


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["open", "exec", "exit", "fork", "syscall", "net"]),
    st.integers(1, 3),
    st.sampled_from([0, 8, 64]),
    st.data(),
    st.sampled_from(["json", "merged"]),
)
def test_any_rows_body_decodes_or_is_refused(
    kind: str, count: int, data_len: int, data: Any, mode: str
) -> None:
    """rows/1 records of the right size but any bytes (and net samples of any length):
    decoded, or refused as a bad body: never an exception the decoder did not expect."""
    if kind == "net":
        samples = data.draw(st.lists(st.binary(max_size=200), min_size=count, max_size=count))
        body = b"".join(len(s).to_bytes(4, "little") + s for s in samples)
    else:
        body = data.draw(st.binary(min_size=count * _rows_width(data_len),
                                   max_size=count * _rows_width(data_len)))  # fmt: skip
    offset = data.draw(st.sampled_from(["0", "1700000000000000000", str(-(2**62)), str(2**62)]))
    h = headers("web1", kind, 1, count, fmt=ROWS, **{H_DATA_LEN: str(data_len), H_CLOCK: offset})
    fed = Fed(mode)
    fed.take(Msg(f"ringtool.web1.{kind}", h, body))
    assert "undecodable" not in fed.fleet.bad_reasons, fed.notes
    check_outputs(fed, 1)


def test_refused_messages_are_a_metric() -> None:
    from ringtool.export.metrics import Families, collect_families

    fed = Fed()
    forged = events("web1", 1, [1.0])
    forged.subject = "ringtool.evil.open"
    fed.take(forged, forged, events("web1", 1, [1.0], **{H_CLOCK: "x"}))
    fams = Families()
    collect_families(fams, fed.fleet)
    (fam,) = [f for f in fams.out if f.name == "ringtool_collect_bad_messages"]
    got = {s.labels["reason"]: s.value for s in fam.samples if s.name.endswith("_total")}
    assert got == {"forged origin": 2.0, "bad header": 1.0}
