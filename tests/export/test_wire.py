"""The message format (ringtool.export.wire): what a reader gets back is what the
tracer would have printed, in both encodings, and foreign messages are refused."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import ExportError
from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.export.batcher import Batcher
from ringtool.export.bounded_queue import BoundedQueue
from ringtool.export.reading import DecoderCache, decode, event_ts_ns
from ringtool.export.wire import H_SEQ, Batch, Encoder, Origin, compact_rows, expand_rows

LAYOUT = load_layout()
OFFSET = 1_700_000_000_000_000_000
ORIGIN = Origin("web1", "boot-id", "run1", "trace", OFFSET)


def records(n: int, cpus: int = 2, paths: list[bytes] | None = None) -> Any:
    arr = np.zeros(n, LAYOUT.event)
    h = arr["h"]
    h["ts"] = 1_000_000 + np.arange(n) * 1000
    h["type"] = np.where(np.arange(n) % 3 == 0, LAYOUT.type_id("exec"), LAYOUT.type_id("open"))
    h["cpu"] = np.arange(n) % cpus
    h["pid"] = 100 + np.arange(n)
    h["tid"] = h["pid"]
    h["comm"] = b"cat"
    arr["data"] = [(paths or [b"/etc/passwd"])[i % len(paths or [1])] for i in range(n)]
    arr["ret"] = 3
    return arr


def printed(arr: Any) -> list[str]:
    """What ``trace --json`` prints for ``arr`` (the JSON lines)."""
    import io

    from ringtool.trace.writers.output_json import JsonOutput

    buf = io.StringIO()
    JsonOutput(buf, Decoder(LAYOUT, realtime_offset_ns=OFFSET)).batch(Records(arr))
    return buf.getvalue().splitlines()


def roundtrip(arr: Any, fmt: str, max_body: int = 900 * 1024) -> list[Any]:
    enc = Encoder(ORIGIN, fmt, "ringtool", Decoder(LAYOUT, realtime_offset_ns=OFFSET),
                  max_body=max_body)  # fmt: skip
    cache = DecoderCache(LAYOUT)
    out = []
    for batch in Batcher(LAYOUT.type_names, 500).split(Records(arr)):
        for msg in enc.encode(batch):
            assert msg.subject == f"ringtool.web1.{batch.type}"
            out.append(decode(msg.headers, msg.body, cache))
    return out


@pytest.mark.parametrize("fmt", ["json", "rows"])
def test_reader_gets_the_tracers_lines_with_lanes_numbered_from_one(fmt: str) -> None:
    arr = records(2000)
    got = roundtrip(arr, fmt)
    lines = [line for rec in got for line in rec.lines]
    assert sorted(lines) == sorted(printed(arr))
    lanes: dict[Any, list[int]] = {}
    for rec in got:
        lanes.setdefault(rec.lane, []).extend(range(rec.first, rec.first + rec.count))
        assert (rec.host, rec.boot, rec.run) == ("web1", "boot-id", "run1")
        assert all(json.loads(line)["cpu"] == rec.cpu for line in rec.lines)
        assert all(json.loads(line)["type"] == rec.type for line in rec.lines)
    for seqs in lanes.values():
        assert seqs == list(range(1, len(seqs) + 1))
    # the events of one lane keep the ring's order
    for rec in got:
        ts = event_ts_ns(rec)
        assert ts == sorted(ts)


def test_rows_are_compact_and_zero_stale_words_after_the_string() -> None:
    arr = records(4, paths=[b"/a", b"/bb/cc/dd/ee"])
    off = LAYOUT.event.fields["data"][1]
    arr.view(np.uint8).reshape(4, -1)[0, off + 5 : off + 40] = 0x41  # stale, after the NUL
    keep, body = compact_rows(arr)
    assert keep == 16  # "/bb/cc/dd/ee" + NUL fits two 8-byte words
    assert len(body) == 4 * (off + 16)
    back = expand_rows(body, 4, keep, LAYOUT.event)
    strings = [d.split(b"\0")[0] for d in back["data"].tolist()]
    assert strings == [b"/a", b"/bb/cc/dd/ee", b"/a", b"/bb/cc/dd/ee"]
    raw = back.view(np.uint8).reshape(4, -1)
    assert not raw[0, off + 8 :].any()  # the stale words after the NUL's word: zeroed
    assert back["h"].tolist() == arr["h"].tolist()
    # a string that fills the whole field (no NUL) is kept whole
    arr["data"][1] = b"x" * 256
    keep, body = compact_rows(arr)
    assert keep == 256 and expand_rows(body, 4, keep, LAYOUT.event)["data"][1] == b"x" * 256


def test_a_batch_too_large_for_one_message_is_split_without_renumbering() -> None:
    arr = records(600, cpus=1)
    got = roundtrip(arr, "json", max_body=8 * 1024)
    assert len(got) > 10
    for rec in got:
        assert len("\n".join(rec.lines)) <= 8 * 1024
    exec_ranges = sorted((r.first, r.count) for r in got if r.type == "exec")
    pos = 1
    for first, count in exec_ranges:
        assert first == pos
        pos += count
    assert pos - 1 == 200


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=30), st.text(max_size=40), max_size=12),
       st.binary(max_size=300))  # fmt: skip
def test_foreign_messages_raise_export_error_only(headers: dict[str, str], body: bytes) -> None:
    try:
        decode(headers, body, DecoderCache(LAYOUT))
    except ExportError:
        pass


@pytest.mark.parametrize("fmt", ["json", "rows"])
def test_a_body_that_does_not_match_its_count_is_refused(fmt: str) -> None:
    enc = Encoder(ORIGIN, fmt, "ringtool", Decoder(LAYOUT, realtime_offset_ns=OFFSET))
    batch = Batcher(LAYOUT.type_names).split(Records(records(10, cpus=1)[1:3]))[0]
    msg = enc.encode(batch)[0]
    msg.headers[H_SEQ] = "1-3"
    with pytest.raises(ExportError):
        decode(msg.headers, msg.body, DecoderCache(LAYOUT))
    with pytest.raises(ExportError):
        decode(msg.headers, msg.body[:-3], DecoderCache(LAYOUT))


def test_queue_refuses_beyond_its_bound_and_never_blocks() -> None:
    woken = []
    q = BoundedQueue(1000, on_put=lambda: woken.append(1))
    b = Batch(0, "open", 1, 3, None, 400)
    assert q.put(b) and q.put(b)
    assert not q.put(b)  # 1200 > 1000
    assert woken == [1]  # one wake-up for the idle period
    assert q.take() is b and q.put(b)
    assert len(q.take_all()) == 2 and q.nbytes == 0
