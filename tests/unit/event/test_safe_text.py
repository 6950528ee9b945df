"""Data from traced processes is never markup and never reaches a terminal as a control
sequence: the TUI, the ``--no-tui`` columns and the JSON lines, fed hostile strings."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from ringtool.event.decode import Decoder, Event, cstr
from ringtool.event.json_lines import printable_line
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.writers.output_columns import ColumnOutput, format_event
from ringtool.trace.writers.output_json import JsonOutput
from tests.helpers.net_records import net_records, net_sample
from tests.helpers.stats import new_stats, open_batch

LAYOUT = load_layout()
HOSTILE = [
    "[/x]",
    "[bold]x[/bold]",
    "[link=http://evil]x[/link]",
    ":smile: [red]",
    "\x1b[2J\x1b[H",
    "\x1b[31mred\x1b[0m",
    "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "\x1b]52;c;cHduZWQ=\x07",
    "\x1b]0;title\x07",
    "\x9b2J",  # a C1 CSI
    "abc\rXYZ",
    "abc\b\b\bXYZ",
    "a\x00b",
    "tab\there\nnewline",
    "\x7f\x85\u2028\u2029",
    "\u202eevil\u202c",  # bidi override
    "\ufeff\u200b",
    "/" + "p" * 4096,
    cstr(b"bad \xff\xfe utf-8 \xc3"),
    cstr(b"\xed\xa0\x80 surrogate bytes"),
]
hostile_text = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=64),
    st.binary(max_size=64).map(cstr),
    st.lists(st.sampled_from(HOSTILE), min_size=1, max_size=4).map("".join),
)
SGR = re.compile(r"\x1b\[[0-9;]*m")


def _clean(out: str) -> bool:
    """No character a terminal would act on: everything printable, or a newline."""
    return all(ch == "\n" or ch.isprintable() for ch in out)


def _event(typ: str, comm: str, text: str) -> Event:
    ev: Event = {"type": typ, "ts": 0.0, "cpu": 0, "pid": 42, "tid": 42, "comm": comm}
    per_type: dict[str, Event] = {
        "exec": {"filename": text, "ppid": 1},
        "open": {"path": text, "flags": 0, "ret": 3},
        "fork": {"child_pid": 43, "child_comm": text, "ppid": 1},
        "exit": {"exit_code": 0, "ppid": 1},
    }
    ev.update(per_type[typ])
    return ev


def _stats(comms: list[bytes]) -> TraceStats:
    st_ = new_stats()
    st_.add_batch(open_batch(np.arange(len(comms)) + 100, comms))
    st_.tick(drops_cpu=[0, 1], syscall_hist={0: {12: 9}}, now=1.0)
    return st_


def _render(tui: TraceTui, *, color: bool, w: int, h: int) -> str:
    buf = io.StringIO()
    tui.console = Console(
        file=buf, width=w, height=h, force_terminal=color,
        color_system="truecolor" if color else None, legacy_windows=False,
    )  # fmt: skip
    tui.console.print(tui.render(), height=h)
    return buf.getvalue()


def test_printable_examples() -> None:
    assert printable("/tmp/[/x]") == "/tmp/[/x]"
    assert printable("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert printable("\r\b\x00\x7f\x9b") == "\\x0d\\x08\\x00\\x7f\\x9b"
    assert printable("\u202e") == "\\u202e" and printable("\U000e0001") == "\\U000e0001"
    assert printable("héllo wörld ✓") == "héllo wörld ✓"
    assert cstr(b"a\xffb\0stale") == "a\\xffb"


@given(st.text())
def test_printable_property(text: str) -> None:
    out = printable(text)
    assert out.isprintable()
    assert (out == text) == text.isprintable()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(hostile_text, min_size=1, max_size=6),
    comm_bytes=st.lists(st.binary(min_size=1, max_size=15), min_size=1, max_size=4),
    size=st.sampled_from([(80, 24), (120, 40), (60, 15)]),
)
def test_tui_renders_hostile_data_as_text(
    texts: list[str], comm_bytes: list[bytes], size: tuple[int, int]
) -> None:
    w, h = size
    tui = TraceTui(Decoder(LAYOUT), console=Console(file=io.StringIO()), input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [f"source net disabled: {texts[0]}"])
    for i, text in enumerate(texts):
        typ = ("exec", "open", "fork", "exit")[i % 4]
        tui.tail.append(_event(typ, texts[-1 - i], text))
    arr = np.zeros(len(comm_bytes), dtype=LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id("open")
    arr["h"]["comm"] = comm_bytes
    arr["data"] = [c * 20 for c in comm_bytes]
    tui.batch(Records(arr))  # decoded from raw record bytes (invalid UTF-8 included)
    tui.stats(_stats([*comm_bytes, texts[0].encode("utf-8", "surrogatepass")[:15]]))
    tui.note(texts[-1])

    plain = _render(tui, color=False, w=w, h=h)
    assert _clean(plain), repr(plain)
    assert len(plain.splitlines()) == h or w < 80  # below 80x24: the "too small" message
    tui.filter = texts[0][:20]
    tui.editing = texts[-1][:20]
    colored = _render(tui, color=True, w=w, h=h)
    assert _clean(SGR.sub("", colored)), repr(colored)  # rich's own styles, nothing else


def test_tui_shows_markup_literally() -> None:
    tui = TraceTui(Decoder(LAYOUT), console=Console(file=io.StringIO()), input_fd=-1)
    tui.start(["open"], [])
    tui.tail.append(_event("open", "[bold]c[/bold]", "/t/[/x]"))
    tui.tail.append(_event("open", "esc", "/t/a\x1b[2Jb"))
    tui.filter = ""
    out = _render(tui, color=False, w=120, h=40)
    assert "/t/[/x] O_RDONLY = 3" in out and "[bold]c[/bold]" in out
    assert "/t/a\\x1b[2Jb O_RDONLY = 3" in out


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(hostile_text, min_size=1, max_size=5), width=st.sampled_from([80, 200]))
def test_columns_never_emit_control_characters(texts: list[str], width: int) -> None:
    buf = io.StringIO()
    col = ColumnOutput(buf, Decoder(LAYOUT), width=width, err=buf)  # stdout and stderr
    col.start(["exec", "open"], texts)
    col.note(texts[-1])
    for i, text in enumerate(texts):
        line = format_event(_event(("exec", "open", "fork", "exit")[i % 4], texts[-1], text), width)
        assert line.isprintable() and len(line) <= width, repr(line)
    arr = np.zeros(len(texts), dtype=LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id("exec")
    arr["h"]["comm"] = [t.encode("utf-8", "surrogatepass")[:15] for t in texts]
    arr["data"] = [t.encode("utf-8", "surrogatepass")[:200] for t in texts]
    col.batch(Records(arr))
    out = buf.getvalue()
    assert _clean(out), repr(out)
    assert all(len(line) <= width for line in out.splitlines())


@settings(max_examples=100, deadline=None)
@given(
    comms=st.lists(st.binary(max_size=16), min_size=1, max_size=5),
    paths=st.lists(st.binary(max_size=256), min_size=1, max_size=5),
    note=hostile_text,
)
def test_json_lines_stay_valid_and_printable(
    comms: list[bytes], paths: list[bytes], note: str
) -> None:
    n = min(len(comms), len(paths))
    arr = np.zeros(n, dtype=LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id("open")
    arr["h"]["comm"] = comms[:n]
    arr["data"] = paths[:n]
    decoder = Decoder(LAYOUT, realtime_offset_ns=0)
    buf, err = io.StringIO(), io.StringIO()
    out = JsonOutput(buf, decoder, err=err)
    out.start(["open"], [note])
    out.note(note)
    comm = note.encode("utf-8", "surrogatepass")[:16]  # what a comm holds of the note
    out.batch(Records(arr, net_records([net_sample(comm=comm, pid=42, tid=42)], decoder)))
    text = buf.getvalue() + err.getvalue()
    text.encode("utf-8")  # strict: no lone surrogates
    assert all(line.isprintable() for line in text.splitlines()), repr(text)
    told = [json.loads(line) for line in err.getvalue().splitlines()]  # start, note
    assert told[0]["notes"] == [note] and told[1] == {"type": "note", "text": note}
    objs: list[dict[str, Any]] = [json.loads(line) for line in buf.getvalue().splitlines()]
    assert objs[:n] == json.loads(json.dumps(decoder.decode(arr)))
    assert objs[-1]["comm"] == (cstr(comm) or "[net]")  # a packet without a comm


@pytest.mark.parametrize("ch", ["\x1b", "\x9b", "\u202e", "\U0001f600", "é"])
def test_printable_line_round_trips(ch: str) -> None:
    line = json.dumps({"s": f"a{ch}b"}, ensure_ascii=False)
    safe = printable_line(line)
    assert json.loads(safe) == {"s": f"a{ch}b"}
    assert safe.isprintable()
