"""The dashboard's NET TX/RX, DISK R/W and WAIT99 columns (there only while their
sources run, sortable, explained in the help) and the drill-down's connections, disk
and run-queue sections, drawn from hand-filled statistics (no kernel)."""

from __future__ import annotations

import io
import re
import time

import numpy as np
from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.records import NO_PACKETS, Records
from ringtool.trace.dashboard import tui_netdisk as netdisk
from ringtool.trace.dashboard import tui_panels as panels
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.dashboard.tui_help import LEGEND
from ringtool.trace.dashboard.tui_iocols import DISK, NET
from ringtool.trace.dashboard.tui_mouse import click_target
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.reading.cpuwait_maps import CpuWaits, WaitHist
from ringtool.trace.report.proc_io import ProcIO
from ringtool.trace.report.stats import TraceStats
from tests.helpers.io_records import LAYOUT, _mapped, disk_records, tcp_records
from tests.helpers.stats import new_stats
from tests.helpers.tui import frame

# a sender, a reader of the disk, a quiet one
SENDER, WRITER, QUIET = 4001, 4002, 4003


def _stats() -> TraceStats:
    st = new_stats()
    for pid, comm in ((SENDER, "sender"), (WRITER, "writer"), (QUIET, "quiet")):
        st._count_proc(pid, comm, 5)
    st.tick(now=1.0)
    return st


def _records() -> Records:
    arr = np.concatenate((
        tcp_records([{"pid": SENDER, "tx_bytes": 90_000, "rx_bytes": 1_000,
                      "daddr": "10.1.2.3", "dport": 8080, "sport": 40000,
                      "duration_ns": 2_000_000}]),
        disk_records([{"pid": WRITER, "rwbs": b"WS", "bytes": 65_536, "dev": 7 << 20,
                       "service_ns": 50_000}]),
    ))  # fmt: skip
    return Records(arr, NO_PACKETS)


def _tui(w: int, h: int, sources: list[str], st: TraceStats) -> tuple[TraceTui, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, width=w, height=h, color_system=None)
    tui = TraceTui(Decoder(LAYOUT), console=console, input_fd=-1)
    tui.start(sources, [])
    tui.stats(st)
    tui.io = ProcIO(LAYOUT, sources)  # its intervals at known times
    tui.io.tick(0.0)
    tui.io.add(_records())
    tui.io.tick(1.0)
    return tui, buf


def _rows(text: str) -> list[str]:
    """The pids of the process table's rows, in order."""
    names = {"sender": SENDER, "writer": WRITER, "quiet": QUIET}
    return [str(names[w]) for ln in text.splitlines() for w in ln.split() if w in names]


def test_the_columns_only_while_their_sources_run() -> None:
    text = frame(*_tui(120, 40, ["exec", "open"], _stats()))
    assert NET not in text and DISK not in text and "WAIT99" not in text
    for w, h in ((120, 40), (80, 24)):
        text = frame(*_tui(w, h, ["tcp", "disk"], _stats()))
        assert NET in text and DISK in text, text
        sender = next(ln for ln in text.splitlines() if "sender" in ln)
        assert "90.0k/1000" in sender  # 90,000 B sent, 1,000 received in 1 s
        writer = next(ln for ln in text.splitlines() if "writer" in ln)
        assert "0/65.5k" in writer
        quiet = next(ln for ln in text.splitlines() if "quiet" in ln)
        assert quiet.split()[-2:] == ["-", "-"]  # nothing counted for it
    text = frame(*_tui(120, 40, ["disk"], _stats()))
    assert DISK in text and NET not in text


def test_the_columns_sort_and_invert() -> None:
    tui, buf = _tui(120, 40, ["tcp", "disk"], _stats())
    frame(tui, buf)  # the keys move along the columns the last frame had
    for _ in range(2):
        tui.view.key(">")  # EVENTS -> EV/IV -> NET TX/RX
    text = frame(tui, buf)
    assert f"{NET}▼" in text
    assert _rows(text)[0] == str(SENDER)
    tui.view.key(">")  # DISK R/W: the writer first, the one with none last
    text = frame(tui, buf)
    assert f"{DISK}▼" in text and _rows(text)[0] == str(WRITER)
    assert _rows(text)[-1] == str(QUIET)
    tui.view.key("I")
    text = frame(tui, buf)
    assert f"{DISK}▲" in text and _rows(text)[-1] == str(WRITER)
    tui.view.key(">")  # past the last column: PID again
    assert tui.view.sort_column == "PID"


def _drill_stats() -> TraceStats:
    st = _stats()
    conns = np.zeros(1, LAYOUT.dtypes["trace_tcp_conn"])
    conns["pid"], conns["owned"], conns["state"] = SENDER, 1, 1
    conns["daddr"] = _mapped("192.168.7.9")
    conns["dport"], conns["sport"] = 443, 51000
    conns["tx_bytes"], conns["rx_bytes"] = 12_345, 678
    conns["start_ns"] = time.monotonic_ns() - 3_000_000_000
    st.tick(drill=(SENDER, {}), tcp_io={SENDER: (12_345, 678)}, drill_conns=conns,
            cpuwait=CpuWaits(WaitHist(), {SENDER: WaitHist({5: 90, 8: 10}, 100, 10**6)}),
            now=2.0)  # fmt: skip
    return st


def test_the_drill_down_shows_connections_disk_and_run_queue() -> None:
    st = _drill_stats()
    for w, h in ((120, 40), (80, 24)):
        tui, buf = _tui(w, h, ["tcp", "disk", "cpuwait"], st)
        tui.view.drill = SENDER
        text = frame(tui, buf)
        assert "connections: 1 open, 1 closed shown" in text, text
        live = next(ln for ln in text.splitlines() if "192.168.7.9:443" in ln)
        assert "51000" in live and "12.3k" in live and "678" in live and "ESTABLISHED" in live
        closed = next(ln for ln in text.splitlines() if "10.1.2.3:8080" in ln)
        assert "40000" in closed and "90.0k" in closed and "closed" in closed
        if h >= 40:  # the disk and run-queue sections below it
            assert "disk I/O since the trace started" in text
            assert "no request completed" in text  # the sender wrote nothing
            assert "run queue: 100 waits" in text
    tui, buf = _tui(120, 40, ["tcp", "disk"], st)
    tui.view.drill = WRITER
    text = frame(tui, buf)
    row = next(ln for ln in text.splitlines() if re.search(r" 7:0 +1 ", ln))
    assert row.split()[-4:] == ["1", "0", "65.5k", "50µs"]  # REQS READ WRITTEN SVC P99
    assert "192.168.7.9" not in text  # the sender's open connection (read for its drill-down)
    tui, buf = _tui(120, 40, ["tcp", "disk"], _stats())  # no cpuwait reading: no section
    tui.view.drill = WRITER
    assert "run queue" not in frame(tui, buf)


def test_every_new_column_header_has_a_legend_line() -> None:
    st = _drill_stats()
    io_ = ProcIO(LAYOUT, ("tcp", "disk"))
    io_.tick(0.0)
    io_.add(_records())
    tables = [
        panels.procs_table(st, ViewState(), 5, io_.tick(1.0)),
        netdisk.conns_table(st, io_, {SENDER}, 3),
        netdisk.disk_table(io_, {WRITER}, 3),
    ]
    headers = {str(c.header).rstrip("▼▲") for t in tables for c in t.columns}
    assert {"WAIT99", NET, DISK, "REMOTE", "SVC P99"} <= headers
    legend = {name for name, _ in LEGEND}
    assert headers <= legend, f"columns without a legend line: {headers - legend}"


def test_a_click_on_a_sources_column_header_sorts_by_it() -> None:
    tui, buf = _tui(120, 40, ["tcp", "disk"], _stats())
    text = frame(tui, buf)
    y, line = next((i, ln) for i, ln in enumerate(text.splitlines()) if DISK in ln)
    layout = tui._layout
    assert layout is not None
    row, column = click_target(layout, tui.console, line.index(DISK) + 2, y, tui.view)
    tui.view.click(row, column)
    assert tui.view.sort_column == DISK and f"{DISK}▼" in frame(tui, buf)


def test_the_process_table_takes_the_room_its_columns_need() -> None:
    for sources, width, cpu in ((["tcp"], 120, True), (["tcp"], 100, False),
                                (["tcp", "disk"], 120, True), (["tcp", "disk"], 119, False),
                                (["disk"], 80, False), (["exec"], 80, True)):  # fmt: skip
        text = frame(*_tui(width, 40, sources, _stats()))
        assert ("per CPU" in text) == cpu, (sources, width)
        sender = next(ln for ln in text.splitlines() if "sender" in ln)
        assert " sender " in sender  # the name whole
