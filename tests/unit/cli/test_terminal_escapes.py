"""Nothing traced reaches a terminal raw: ``kmes-read``'s lines, ``--csv`` on a terminal
(exact CSV into a file or pipe), and the notes that quote a broker's or a bridge's
text. A comm or file name is whatever the traced process chose, e.g. an exec of
``e\\x1b]0;KPWN\\x07x`` (OSC 0 sets the terminal's title)."""

from __future__ import annotations

import csv
import io
import os
import pty
import struct

import numpy as np

from ringtool.cli.kmes_read import event_dict, format_text
from ringtool.event.decode import Decoder
from ringtool.event.decode import Event as TraceEvent
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.event.safe_text import printable
from ringtool.kmes.events import EVENT_EXEC
from ringtool.kmes.layout import Event
from ringtool.trace.writers.output_fields import CsvOutput
from ringtool.trace.writers.output_quiet import QuietOutput
from tests.helpers.net_records import net_event_records

HOSTILE = "e\x1b]0;KPWN\x07x\r\x1b[2J\u202e"
NET: TraceEvent = {  # the comm: what a 16-byte comm holds of HOSTILE, and a quote
    "type": "net", "ts": 1.5, "cpu": 0, "pid": 9, "tid": 9, "comm": '\x1b]0;K\x07\r\x1b[2J,"q"',
    "src": "10.0.0.1", "dst": "10.0.0.2", "sport": 1, "dport": 2, "proto": "tcp", "len": 60,
    "ifindex": 1, "dir": "egress", "captured": 0, "ts_ns": 1, "payload": b"", "raw": b"",
}  # fmt: skip
KEYS = ["pid", "comm", "type"]


def _exec_event() -> Event:
    payload = struct.pack(
        "<IIII16s128s", 7, 7, 7, 0, HOSTILE.encode()[:15], ("/tmp/" + HOSTILE).encode()
    )
    return Event(EVENT_EXEC, 1, 0, 1_700_000_000_000_000_000, 1, 0, payload)


def test_kmes_read_lines_are_printable() -> None:
    ev = _exec_event()
    line = format_text(ev)
    assert line.isprintable()
    assert "\\x1b]0;KPWN\\x07x" in line and "\\x0d" in line
    assert event_dict(ev)["data"]["filename"] == "/tmp/" + HOSTILE  # --json: JSON escapes


def _csv(terminal: bool | None, stream: io.StringIO) -> str:
    out = CsvOutput(stream, Decoder(load_layout(), realtime_offset_ns=0), KEYS,
                    err=io.StringIO(), terminal=terminal)  # fmt: skip
    out.start([], [])
    out.batch(Records(np.empty(0, dtype=load_layout().event), net_event_records([NET])))
    return stream.getvalue()


def test_csv_into_a_file_stays_exact() -> None:
    text = _csv(False, io.StringIO(newline=""))
    assert list(csv.reader(io.StringIO(text, newline="")))[1] == ["9", NET["comm"], "net"]


def test_csv_on_a_terminal_escapes_control_characters() -> None:
    text = _csv(True, io.StringIO(newline=""))
    assert all(line.isprintable() for line in text.split("\r\n"))
    assert "\x1b" not in text and "\x07" not in text
    row = list(csv.reader(io.StringIO(text, newline="")))[1]
    assert row == ["9", printable(NET["comm"]), "net"]  # still CSV: the quote is quoted


def test_csv_finds_the_terminal_itself() -> None:
    main, sub = pty.openpty()
    try:
        with open(sub, "w", closefd=False) as tty:
            out = CsvOutput(tty, Decoder(load_layout(), realtime_offset_ns=0), KEYS)
            assert out.terminal
        assert not CsvOutput(io.StringIO(), Decoder(load_layout(), realtime_offset_ns=0)).terminal
    finally:
        os.close(main)
        os.close(sub)


def test_quiet_notes_are_printable() -> None:
    err = io.StringIO()
    QuietOutput(io.StringIO(), err=err).note("export: nats says \x1b[2J\x07")
    assert err.getvalue() == "ringtool trace: export: nats says \\x1b[2J\\x07\n"


def test_kmes_read_names_an_opens_flags() -> None:
    """kmes-read's text line writes an open's flags and mode as the columns do."""
    from ringtool.event.kmes_types import ORIGIN_RINGBUF, TRACE_EVENT_BASE, TracePayloads

    lay = load_layout()
    rec = np.zeros(1, dtype=lay.event)
    rec["h"]["type"], rec["value"], rec["mode"] = lay.type_id("open"), os.O_CLOEXEC, 0o640
    rec["data"] = b"/etc/\x1b[2Jx"
    kind = TRACE_EVENT_BASE + lay.type_id("open")
    line = format_text(Event(kind, ORIGIN_RINGBUF, 0, 1, 1, 0, rec.tobytes()), TracePayloads())
    assert " flags=O_RDONLY|O_CLOEXEC " in line and " mode=0640 " in line, line
    assert "/etc/\\x1b[2Jx" in line and line.isprintable()
