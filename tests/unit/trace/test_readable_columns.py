"""The text outputs as people read them: errors by name, times with milliseconds (and
dates with -T), open flags by name in --fields columns too, and at 80 columns the
path kept and the flags cut first, in the columns and in the dashboard's events."""

from __future__ import annotations

import io
import os
import re

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.detail_fit import cut_flags, fit_parts
from ringtool.event.layout import load_layout
from ringtool.event.open_flags import flag_text
from ringtool.event.records import Records
from ringtool.event.value_text import clock_texts, field_text, result_text
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.writers.output_columns import ColumnOutput, format_event, header
from ringtool.trace.writers.output_fields import FieldColumnOutput
from tests.helpers.stats import new_stats
from tests.helpers.tui import frame

LAYOUT = load_layout()
CLOEXEC = os.O_RDONLY | os.O_CLOEXEC
PYC = "/work/main/.venv/lib/python3.11/site-packages/rich/__pycache__/{}.cpython-311.pyc"


def _open(path: str, ret: int = 3, flags: int = CLOEXEC, **more: object) -> dict[str, object]:
    return {"type": "open", "ts": 1.2345, "cpu": 1, "pid": 4242, "tid": 4242, "comm": "python3",
            "uid": 1000, "gid": 1000, "path": path, "flags": flags, "mode": 0, "ret": ret,
            "syscall": "openat", **more}  # fmt: skip


def _records(rows: list[tuple[str, int, int, bytes]]) -> np.ndarray:  # type: ignore[type-arg]
    """Open records of ``(comm, flags, ret, path)`` at 1.234 s of the epoch."""
    arr = np.zeros(len(rows), dtype=LAYOUT.event)
    arr["h"]["type"] = LAYOUT.type_id("open")
    arr["h"]["ts"] = 1_234_567_890
    arr["h"]["pid"], arr["uid"] = 4242, 1000
    for i, (comm, flags, ret, path) in enumerate(rows):
        arr[i]["h"]["comm"], arr[i]["value"], arr[i]["ret"] = comm.encode(), flags, ret
        arr[i]["data"] = path
    return arr


def test_errors_read_by_name() -> None:
    assert result_text(-2) == "-2 ENOENT" and result_text(-13) == "-13 EACCES"
    assert result_text(3) == "3" and result_text(0) == "0"
    assert result_text(-4096) == "-4096"  # not an error value: a number
    assert format_event(_open("/etc/nope", ret=-2), None).endswith("= -2 ENOENT (openat)")
    sys_ev = {"type": "syscall", "ts": 0.0, "cpu": 0, "pid": 1, "tid": 1, "comm": "x",
              "uid": 0, "syscall": "read", "latency_us": 150000.0, "ret": -11}  # fmt: skip
    assert format_event(sys_ev, None).endswith("read 150.0 ms = -11 EAGAIN")


def test_times_have_milliseconds_and_with_dates_the_date() -> None:
    # cut, never rounded up into the next second
    assert [t[-4:] for t in clock_texts(np.array([1.2345, 1.9999, 70.0005]))] == [
        ".234", ".999", ".000",
    ]  # fmt: skip
    line = format_event(_open("/x"), None)
    assert re.match(r"\d\d:\d\d:\d\d\.234 ", line), line
    dated = format_event(_open("/x"), None, dates=True)
    assert re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.234 ", dated), dated
    for dates in (False, True):
        out = io.StringIO()
        col = ColumnOutput(out, Decoder(LAYOUT, realtime_offset_ns=0), None, io.StringIO(),
                           dates=dates)  # fmt: skip
        col.start(["open"], [])
        col.batch(Records(_records([("cat", 0, 3, b"/etc/passwd")])))
        head, line = out.getvalue().splitlines()
        clock = clock_texts(np.array([1.23456789]), dates)[0]
        assert head == header(dates) and line.startswith(clock + " ") and clock.endswith(".234")
        assert head.index("CPU") + 2 == line.index("0 4242")  # the TIME column is as wide


def test_fields_columns_name_the_flags_and_stay_aligned() -> None:
    assert field_text("flags", CLOEXEC) == "O_RDONLY|O_CLOEXEC"
    assert field_text("mode", 0o644) == "0644" and field_text("ret", -2) == "-2 ENOENT"
    out = io.StringIO()
    col = FieldColumnOutput(out, Decoder(LAYOUT, realtime_offset_ns=0),
                            ["pid", "flags", "ret", "path"], None, io.StringIO())  # fmt: skip
    col.start(["open"], [])
    col.batch(Records(_records([("cat", CLOEXEC, 3, b"/etc/a"),
                                ("cat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, -13, b"/etc/b"),
                                ("cat", 0, -2, b"/etc/c")])))  # fmt: skip
    head, *lines = out.getvalue().splitlines()
    assert lines[0].split() == ["4242", "O_RDONLY|O_CLOEXEC", "3", "/etc/a"]
    assert lines[1].split()[1:] == ["O_WRONLY|O_CREAT|O_TRUNC", "-13", "EACCES", "/etc/b"]
    assert lines[2].split()[1:] == ["O_RDONLY", "-2", "ENOENT", "/etc/c"]
    for name, value in (("RET", "3"), ("PATH", "/etc/a")):
        assert head.index(name) == lines[0].index(value)
    assert lines[2].index("-2 ENOENT") == head.index("RET")
    out = io.StringIO()  # on a terminal: long flags cut by names, the columns in line
    col = FieldColumnOutput(out, Decoder(LAYOUT, realtime_offset_ns=0),
                            ["flags", "ret", "path"], 80, io.StringIO())  # fmt: skip
    col.start(["open"], [])
    col.batch(Records(_records([("cat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 3, b"/a")])))
    head, line = out.getvalue().splitlines()
    assert line.split()[:2] == ["O_WRONLY|O_CREAT|…", "3"] and line.index("/a") == head.index(
        "PATH"
    )


def test_a_cut_line_keeps_the_path_and_cuts_the_flags_first() -> None:
    names = ["console", "text", "table", "segment"]
    for width in (80, 120):
        head = len(format_event(_open(""), None)) - len(" O_RDONLY|O_CLOEXEC = 3 (openat)")
        room = width - head - len(" … = 3")  # the flags at least become …
        paths = [(PYC if width == 120 else "/a/{}.pyc").format(n)[-room:] for n in names]
        lines = [format_event(_open(p, flags=CLOEXEC | os.O_NOFOLLOW), width) for p in paths]
        for path, line in zip(paths, lines, strict=True):
            assert len(line) <= width and f" {path} " in line and line.endswith(" = 3"), line
    assert [cut_flags("O_RDONLY|O_CLOEXEC", w) for w in (18, 17, 10, 9)] == [
        "O_RDONLY|O_CLOEXEC", "O_RDONLY|…", "O_RDONLY|…", "…",
    ]  # fmt: skip
    short = format_event(_open("/etc/a", flags=CLOEXEC | os.O_NOFOLLOW), 80)
    assert short.endswith(" /etc/a O_RDONLY|… = 3"), short  # whole names, then …
    hostile = format_event(_open("/tmp/\x1b[2J" + "d" * 60, ret=-2), 80)
    assert hostile.isprintable() and len(hostile) <= 80 and hostile.endswith("-2 ENOENT")


@given(
    path=st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=90),
    flags=st.integers(0, 2**21 - 1),
    ret=st.sampled_from([3, -2, -13]),
    width=st.integers(0, 140),
)
def test_a_path_that_fits_without_the_flags_stays_whole(
    path: str, flags: int, ret: int, width: int
) -> None:
    result = f" = {result_text(ret)}"
    out = fit_parts(path, f" {flag_text(flags)}{result} (openat)", width, flags_first=True)
    assert len(out) <= width
    if len(path) + len(" …") + len(result) <= width:
        assert out.startswith(path + " ") and out.removesuffix(" (openat)").endswith(result), out


def _dashboard(rows: list[tuple[str, int, int, bytes]], width: int = 80) -> list[str]:
    """The lines of the dashboard's events of these opens (its frame at ``width`` x 24)."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, height=24, color_system=None)
    tui = TraceTui(Decoder(LAYOUT, realtime_offset_ns=0), console=console, input_fd=-1)
    tui.start(["exec", "open"], [])
    st, arr = new_stats(), _records(rows)
    st.add_batch(arr)
    tui.batch(Records(arr))
    st.tick(drops_cpu=[0, 0], now=10.0)
    tui.stats(st)
    lines = frame(tui, buf).splitlines()
    assert all(len(line) <= width for line in lines)
    start = next(i for i, line in enumerate(lines) if "DETAIL" in line)
    return lines[start : start + 2 + len(rows)]


def test_the_dashboard_keeps_paths_and_the_uid_where_it_fits() -> None:
    short = [("python3", CLOEXEC, 3, b"/etc/ld.so.cache"), ("python3", 0, -2, b"/etc/nope")]
    head, _, *rows = _dashboard(short)
    assert "UID" in head  # at 80 columns, once the flags are cut
    for (_, _, _, path), line in zip(short, rows, strict=True):
        assert f" {path.decode()} " in line and " 1000 " in line, line
        assert re.search(r"\d\d:\d\d:\d\d\.234", line), line
    assert rows[1].rstrip().endswith("-2 ENOENT")
    names = ["console", "text", "table", "segment"]
    pyc = [("python3", CLOEXEC, 3, PYC.format(n).encode()) for n in names]
    head, _, *rows = _dashboard(pyc)  # no room for the UID: the file names stay apart
    assert "UID" not in head
    for n, line in zip(names, rows, strict=True):
        assert f"/{n}.cpython-311.pyc " in line, line
    hostile = _dashboard([("x\x1b[2J", 0, 3, b"/tmp/\x1b]52;c;x\x07")], 120)
    assert "\\x1b]52;c;x\\x07" in hostile[2] and "x\\x1b[2J" in hostile[2], hostile
