"""Keys of the trace dashboard: terminal bytes -> key names, keys -> view state,
and what the frame then shows (sort marker, scroll position, filter on every panel,
help overlay, drill-down)."""

from __future__ import annotations

import io
import os
import pty
import textwrap

import pytest
from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.dashboard.tui_help import KEYS, LEGEND, WRAP
from ringtool.trace.dashboard.tui_keys import KeyParser
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.report.stats import TraceStats
from tests.helpers.records import header_records
from tests.helpers.stats import new_stats
from tests.helpers.tui import frame

LAYOUT = load_layout()


@pytest.mark.parametrize(
    ("raw", "keys"),
    [
        (b"\x1b[A\x1b[B\x1b[C\x1b[D", ["up", "down", "right", "left"]),
        (b"\x1bOA\x1bOB", ["up", "down"]),  # application cursor mode
        (b"\x1b[5~\x1b[6~", ["pgup", "pgdn"]),
        (b"\x1b[H\x1b[F\x1b[1~\x1b[4~\x1b[7~\x1b[8~\x1bOH\x1bOF",
         ["home", "end", "home", "end", "home", "end", "home", "end"]),
        (b"\x1bOP\x1b[11~\x1b[[A", ["f1", "f1", "f1"]),  # xterm, rxvt, linux console
        (b"\x1b[17~", ["f6"]),
        (b"q?<>I/\r\x7f\t", ["q", "?", "<", ">", "I", "/", "enter", "backspace", "tab"]),
        # unknown sequences and control characters are dropped whole
        (b"\x1b[1;5A\x1b[20~\x1b[200~x\x1bx\x00\x07\x1b[[Ba", ["x", "a"]),
        ("é€".encode(), ["é", "€"]),
    ],
)  # fmt: skip
def test_key_parser(raw: bytes, keys: list[str]) -> None:
    assert KeyParser().feed(raw) + KeyParser().flush() == keys
    split = KeyParser()  # the same bytes one at a time
    got = [k for b in raw for k in split.feed(bytes([b]))]
    assert got + split.flush() == keys and not split.pending


def test_lone_escape_waits_for_the_timeout() -> None:
    p = KeyParser()
    assert p.feed(b"\x1b") == [] and p.pending
    assert p.feed(b"[") == [] and p.pending
    assert p.flush() == [] and not p.pending  # an unfinished sequence is dropped
    assert p.feed(b"\x1b") == [] and p.flush() == ["esc"]
    assert p.feed(b"\x1b\x1b[A") == ["esc", "up"]


def _stats(n: int = 30) -> TraceStats:
    """``n`` processes: pid 100+i, comm ``odd``/``zzz``, i+1 events each."""
    st = new_stats()
    for i in range(n):
        st.add_batch(header_records([{"type": "exec", "cpu": 0, "pid": 100 + i,
                                      "comm": b"odd" if i % 2 else b"zzz"}] * (i + 1)))  # fmt: skip
    st.tick(syscall_hist={0: {12: 9}}, now=1.0)
    return st


def test_sort_by_any_column_and_invert() -> None:
    v, st = ViewState(), _stats()
    rows, total = v.procs(st, 5)
    assert total == 30 and v.sort_column == "EVENTS" and v.descending
    assert [r[0] for r in rows] == [129, 128, 127, 126, 125]
    v.key("I")  # the selection (129) stays selected: the window follows it to the end
    assert [r[0] for r in v.procs(st, 3)[0]] == [127, 128, 129] and v.sel_pid == 129
    v.key("g")
    assert [r[0] for r in v.procs(st, 3)[0]] == [100, 101, 102]
    v.key("<")  # COMM, inverted: Z first
    assert v.sort_column == "COMM" and v.descending
    v.key("home")
    assert {r[1] for r in v.procs(st, 15)[0]} == {"zzz"}
    v.key("I")
    v.key("<")  # PID, smallest first
    assert v.sort_column == "PID" and not v.descending
    v.key("home")
    assert [r[0] for r in v.procs(st, 2)[0]] == [100, 101]
    v.key("<")  # wraps around to the last column
    assert v.sort_column == "EV/IV"
    v.key(">")
    v.key("f6")
    assert v.sort_column == "COMM"


def test_scroll_stays_in_bounds() -> None:
    v, st = ViewState(), _stats(30)
    v.procs(st, 10)
    for key in ["up", "pgup", "home"]:
        v.key(key)
        assert (v.sel, v.top) == (0, 0)
    v.key("pgdn")
    v.procs(st, 10)
    assert (v.sel, v.top) == (10, 1)
    for key in ["end", "down", "pgdn"]:
        v.key(key)
        assert (v.sel, v.top) == (29, 20)
    rows, _ = v.procs(st, 10)
    assert rows[-1][0] == 100  # the last row of 30, sorted by events
    v.key("pgup")
    assert (v.sel, v.top) == (19, 19)
    # the events tail scrolls back from the newest, never past the oldest
    tail = [{"comm": "c", "pid": i, "ts": 0.0} for i in range(50)]
    v.key("tab")
    assert [e["pid"] for e in v.events(tail, 10)[0]] == list(range(40, 50))
    v.key("down")
    assert v.back == 0
    v.key("pgup")
    v.key("up")
    assert [e["pid"] for e in v.events(tail, 10)[0]] == list(range(29, 39))
    v.key("home")
    assert v.back == 40 and [e["pid"] for e in v.events(tail, 10)[0]] == list(range(10))
    v.key("up")
    assert v.back == 40
    v.key("end")
    assert v.back == 0


def test_unknown_keys_are_ignored() -> None:
    v = ViewState()
    before = repr(v)
    for key in ["x", "left", "right", "f6x", "Z", "backspace", "\u00e9"]:
        assert v.key(key) is False
    assert repr(v) == before
    assert v.key("q") is True


def _tui(w: int, h: int) -> tuple[TraceTui, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, color_system=None)
    tui = TraceTui(Decoder(LAYOUT), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    tui.stats(_stats())
    for i in range(30):
        tui.tail.append({"type": "exec", "ts": 0.0, "cpu": 0, "pid": 100 + i, "tid": 100 + i,
                         "comm": "odd" if i % 2 else "zzz", "filename": f"/bin/f{i}",
                         "ppid": 1})  # fmt: skip
    return tui, buf


def _frame(tui: TraceTui, buf: io.StringIO) -> str:
    return frame(tui, buf)


@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40)])
def test_filter_applies_to_every_panel(w: int, h: int) -> None:
    tui, buf = _tui(w, h)
    assert "zzz" in _frame(tui, buf) and "filter:" not in _frame(tui, buf)
    for key in ["/", "o", "d", "d", "enter"]:
        tui.view.key(key)
    text = _frame(tui, buf)
    lines = text.splitlines()
    assert "filter: comm~odd" in lines[0]
    assert "zzz" not in text and "odd" in text
    for title in ("per CPU (all processes)", "top syscalls (by count) (all processes)",
                  "sources (all processes)", "[filter: odd]"):  # fmt: skip
        assert title in text, title
    assert "top processes  1/15" in text
    tui.view.key("/")
    tui.view.key("esc")  # clears it
    assert "filter:" not in _frame(tui, buf) and "zzz" in _frame(tui, buf)


@pytest.mark.parametrize(("w", "h"), [(80, 24), (120, 40)])
def test_help_overlay_lists_every_key(w: int, h: int) -> None:
    tui, buf = _tui(w, h)
    tui.view.key("f1")
    lines: list[str] = []
    for _ in range(8):  # the arrows scroll the overlay through
        text = _frame(tui, buf)
        assert "any other key closes" in text and "per CPU" not in text
        assert len(text.splitlines()) == h
        lines += text.splitlines()
        tui.view.key("pgdn")
    for key, does in (*KEYS, *LEGEND):  # (a long one goes on in the next rows)
        first = textwrap.wrap(does, WRAP)[0]
        assert any(key in line and first in line for line in lines), key
    tui.view.key("esc")
    assert "per CPU" in _frame(tui, buf)


def test_sort_marker_moves() -> None:
    tui, buf = _tui(80, 24)
    assert "EVENTS▼" in _frame(tui, buf)
    tui.view.key(">")
    text = _frame(tui, buf)
    assert "EV/IV▼" in text and "EVENTS▼" not in text
    tui.view.key("I")
    assert "EV/IV▲" in _frame(tui, buf)


def test_drill_down_and_back() -> None:
    tui, buf = _tui(120, 40)
    _frame(tui, buf)
    for key in ["down", "down", "enter"]:
        tui.view.key(key)
    text = _frame(tui, buf)
    assert "process 127  odd  (Esc returns)" in text
    assert "process 127: recent exec/open/net" in text
    shown = [ln for ln in text.splitlines() if "/bin/f" in ln]
    assert shown and all("/bin/f27" in ln for ln in shown)
    tui.view.key("esc")
    text = _frame(tui, buf)
    assert "process 127" not in text and "/bin/f26" in text


def test_handle_input_parses_split_sequences() -> None:
    master, slave = pty.openpty()
    try:
        console = Console(file=io.StringIO(), width=80, height=24, force_terminal=True)
        tui = TraceTui(Decoder(LAYOUT), console=console, input_fd=slave)
        with tui:
            tui.stats(_stats())
            tui.render()
            os.write(master, b"\x1b[6~>?")
            assert tui.handle_input() is False
            assert tui.view.sel == tui.view.page_procs and tui.view.help
            tui.view.key("esc")
            os.write(master, b"\x1b[B\x1b[1;5B\x1b[B")  # Down, Ctrl+Down (ignored), Down
            assert tui.handle_input() is False and tui.view.sel == tui.view.page_procs + 2
            os.write(master, b"\x1b")  # a lone Esc after the timeout: Esc
            tui.view.drill = 5
            assert tui.handle_input() is False and tui.view.drill is None
            os.write(master, b"q")
            assert tui.handle_input() is True
    finally:
        os.close(master)
        os.close(slave)


def test_enter_right_after_the_filter_drills_into_a_matching_process() -> None:
    """Keys typed faster than frames ("/zzz", Enter, Enter in one read): Enter acts on
    the list as filtered now, not on the last frame's (which began with pid 129 odd)."""
    v, st = ViewState(), _stats(30)
    assert v.procs(st, 10)[0][0][:2] == (129, "odd")
    for key in ["/", "z", "z", "z", "enter", "enter"]:
        v.key(key)
    assert v.drill == 128  # the biggest "zzz" process
    v.key("esc")
    v.procs(st, 10)
    for key in ["I", "home", "down", "enter"]:  # smallest first, the second row, no frame
        v.key(key)
    assert v.drill == 102
