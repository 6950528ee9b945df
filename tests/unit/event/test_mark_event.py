"""The `mark` event kind (`ringtool mark TEXT`) through the schema: decoding, JSON
lines, the one-line detail, the columns, the KMES decoding; its text is data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ringtool.errors import UsageError
from ringtool.event.decode import Decoder
from ringtool.event.detail import DETAIL, detail
from ringtool.event.fields import FIELD_NAMES
from ringtool.event.json_lines import json_lines
from ringtool.event.kmes_types import TRACE_EVENT_BASE, TracePayloads
from ringtool.event.layout import load_layout
from ringtool.trace.reading.mark_send import encode
from ringtool.trace.writers.output_columns import format_event

LAYOUT = load_layout()
HOSTILE = "step 1 \x1b[2J\u202e[red]x[/red]"


def mark_record(text: str) -> np.ndarray:  # type: ignore[type-arg]
    arr = np.zeros(1, dtype=LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id("mark")
    arr["h"]["ts"] = 123_456_789
    arr["h"]["pid"] = 42
    arr["h"]["comm"] = b"ringtool"
    arr["data"] = encode(text, LAYOUT.constants["TRACE_DATA_LEN"])
    return arr


def test_the_header_declares_the_mark_type() -> None:
    assert LAYOUT.type_names[LAYOUT.constants["TRACE_MARK"]] == "mark"
    assert "text" in FIELD_NAMES and "mark" in DETAIL


def test_a_mark_decodes_to_its_text() -> None:
    ev = Decoder(LAYOUT).decode(mark_record("hello"))[0]
    assert ev["type"] == "mark" and ev["text"] == "hello" and ev["pid"] == 42
    assert detail(ev) == "hello"


def test_json_keeps_the_text_as_data() -> None:
    line = json_lines(Decoder(LAYOUT), mark_record(HOSTILE))[0]
    obj = json.loads(line)
    assert obj["type"] == "mark" and obj["text"] == HOSTILE


def test_the_columns_escape_the_text() -> None:
    ev = Decoder(LAYOUT).decode(mark_record(HOSTILE))[0]
    text = format_event(ev, None)
    assert "\x1b" not in text and "\u202e" not in text
    assert "\\x1b[2J" in text and "mark" in text


def test_kmes_consumers_decode_a_mark() -> None:
    rec = mark_record("over kmes")
    got = TracePayloads().decode(TRACE_EVENT_BASE + LAYOUT.type_id("mark"), rec.tobytes())
    assert got is not None and got[0] == "mark" and got[1]["text"] == "over kmes"


def test_text_limits() -> None:
    size = LAYOUT.constants["TRACE_DATA_LEN"]
    assert encode("x" * (size - 1), size).endswith(b"x\0")
    with pytest.raises(UsageError, match="at most 255"):
        encode("x" * size, size)
    with pytest.raises(UsageError, match="NUL"):
        encode("a\0b", size)
