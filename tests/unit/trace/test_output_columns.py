"""--no-tui column formatting stays within 80 columns."""

from __future__ import annotations

import io

import numpy as np

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.trace.report.stats import TraceStats
from ringtool.trace.writers.output_columns import HEADER, ColumnOutput, cut, fit, format_event


def test_fit_keeps_the_end() -> None:
    assert fit("short", 10) == "short"
    # the cut is marked as the TUI marks it, never as a relative-looking "../"
    assert fit("/very/long/path/file.txt", 10) == "…/file.txt"
    assert len(fit("x" * 200, 34)) == 34


def test_cut_ends_in_an_ellipsis() -> None:
    assert cut("short", 10) == "short" and cut("short", None) == "short"
    assert cut("0123456789abc", 10) == "012345678…"
    assert cut("0123456789", 10) == "0123456789"


def test_event_lines_fit_80_columns() -> None:
    ev = {"type": "open", "ts": 0.0, "cpu": 1, "pid": 4194304, "tid": 1, "comm": "c" * 16,
          "path": "/a" * 200, "flags": 0, "ret": -13}  # fmt: skip
    line = format_event(ev)
    assert len(line) == 80 and line.endswith("= -13 EACCES")
    assert len(HEADER) <= 80 and HEADER.split() == [
        "TS",
        "CPU",
        "PID",
        "UID",
        "COMM",
        "TYPE",
        "DETAIL",
    ]


def test_column_output_all_lines_fit() -> None:
    lay = load_layout()
    out, err = io.StringIO(), io.StringIO()
    col = ColumnOutput(out, Decoder(lay), err=err)
    col.start(["exec", "open", "syscalls", "net"], ["source net disabled: " + "x" * 100])
    arr = np.zeros(3, dtype=lay.event)
    arr["h"]["type"] = [lay.type_id("exec"), lay.type_id("open"), lay.type_id("syscall")]
    arr["data"] = b"/usr/" + b"z" * 250
    col.batch(Records(arr))
    st = TraceStats(lay.type_names, 2, ["exec", "open", "syscalls"])
    st.add_batch(arr)
    st.tick(drops_cpu=[1, 2], syscall_hist={257: {10: 5}})
    col.stats(st)
    col.summary(st)
    lines = out.getvalue().splitlines()
    # stdout: the header and the 3 events; stderr: notes, the ready line, stats, summary
    assert lines[0] == HEADER and len(lines) == 4
    told = err.getvalue().splitlines()
    assert told[0] == "note: source net disabled: " + "x" * 52 + "…"
    assert told[1:3] == ["sources: exec, open, syscalls, net", "Tracing... Ctrl-C to end."]
    assert told[3].startswith("-- ") and told[4].startswith("3 events")
    assert all(len(line) <= 80 for line in lines + told), max(lines + told, key=len)


def _ev(typ: str, **fields: object) -> dict[str, object]:
    return {"type": typ, "ts": 0.0, "cpu": 1, "pid": 42, "tid": 42, "comm": "c", **fields}


def test_wide_lines_are_whole() -> None:
    path = "/d" * 150 + "/file.txt"
    line = format_event(_ev("open", path=path, flags=0, ret=3), None)
    assert line.endswith(f" {path} O_RDONLY = 3")
    long_comm = format_event(_ev("exec", filename="/x", ppid=1, comm="\x1b" * 15), None)
    assert "\\x1b" * 15 in long_comm  # escaped, and not cut to 16 characters


def test_cut_lines_keep_what_matters() -> None:
    path = "/d" * 150 + "/file.txt"
    line = format_event(_ev("open", path=path, flags=0, ret=-2), 80)
    assert len(line) == 80 and line.endswith("file.txt … = -2 ENOENT") and "open    …" in line
    net = _ev("net", dir="egress", proto="tcp", src="2001:db8::1" * 3, sport=443,
              dst="2001:db8::2" * 3, dport=51234, len=1500, pid=0, comm="")  # fmt: skip
    line = format_event(net, 80)
    assert len(line) == 80 and line.split()[6:8] == ["egress", "tcp"] and line.endswith("…")
    assert line.split()[4] == "[net]"  # packets: no process, labelled, not a blank COMM
    assert format_event(net, 400).endswith("len=1500")


def test_column_output_without_width_never_cuts() -> None:
    lay = load_layout()
    out, err = io.StringIO(), io.StringIO()
    col = ColumnOutput(out, Decoder(lay), width=None, err=err)
    col.start(["open"], ["x" * 300])
    arr = np.zeros(1, dtype=lay.event)
    arr["h"]["type"] = lay.type_id("open")
    arr["data"] = b"/" + b"q" * 250
    col.batch(Records(arr))
    assert "note: " + "x" * 300 in err.getvalue()
    assert "/" + "q" * 250 + " O_RDONLY = 0" in out.getvalue()
