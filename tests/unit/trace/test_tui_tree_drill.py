"""The dashboard's tree places processes older than the trace under their parent from
/proc, and its drill-down opens by name (every process of a comm, exited ones too) as
well as by pid, with the kernel's per-process histograms added up (no kernel)."""

from __future__ import annotations

import io
import os
from pathlib import Path

from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.dashboard.tui_tree import ProcParents
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.reading.hist_maps import add_items
from ringtool.trace.reading.latency_buckets import KEY_BITS
from tests.helpers.stats import new_stats
from tests.helpers.tui import frame


def test_tree_reads_the_parents_of_older_processes_from_proc() -> None:
    st = new_stats()  # no fork record: both started before the trace
    st._count_proc(os.getppid(), "parent", 1)
    st._count_proc(os.getpid(), "child", 9)  # more events: sorted first, yet nested
    view = ViewState(tree=True)
    rows, _ = view.procs(st, 10)
    assert [(pid, comm) for pid, comm, _, _ in rows] == [
        (os.getppid(), "parent"), (os.getpid(), "└─child"),
    ]  # fmt: skip


def test_proc_parents_reads_each_pid_once(tmp_path: Path) -> None:
    (tmp_path / "500").mkdir()
    (tmp_path / "500" / "stat").write_bytes(b"500 (a) b) S 400 500 500 0 -1\n")
    parents = ProcParents(str(tmp_path))
    assert parents.parents([500, 600], {7: 1}) == {7: 1, 500: 400}  # 600: gone
    (tmp_path / "500" / "stat").write_bytes(b"500 (a) S 1 500 500 0 -1\n")  # reparented
    assert parents.parents([500], {}) == {500: 400}  # as first seen
    assert parents.parents([500], {500: 300}) == {500: 300}  # a fork record wins


def _tui() -> tuple[TraceTui, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, width=100, height=40, color_system=None)
    tui = TraceTui(Decoder(load_layout()), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    st = new_stats(syscall_name={257: "openat"}.get)  # type: ignore[arg-type]
    for pid, comm, n in ((10, "sh", 9), (11, "sh", 3), (12, "other", 5)):
        st._count_proc(pid, comm, n)
    tui.stats(st)
    return tui, buf


def test_drill_down_by_name_takes_every_process_of_the_comm() -> None:
    tui, buf = _tui()
    frame(tui, buf)
    tui.view.key("n")  # the selected row: pid 10, "sh"
    assert tui.view.drill_name == "sh" and tui.view.drill is None
    assert tui.drill == ("sh", frozenset({10, 11}))  # what the runner reads of the kernel
    st = tui._stats
    assert st is not None
    st.tick(drill=("sh", {257: {100: 12}}), now=1.0)
    text = frame(tui, buf)
    assert "name sh (2 processes)  (Esc returns)" in text
    assert "name sh: recent" in text
    events = [{"pid": p, "comm": c, "ts": 0.0} for p, c in ((10, "sh"), (12, "other"), (11, "sh"))]
    assert [e["pid"] for e in tui.view.matching(events)] == [10, 11]
    tui.view.key("esc")
    assert tui.drill is None and tui.view.drill_name is None
    tui.view.key("enter")  # by pid: that one only
    assert tui.drill == (10, frozenset({10}))


def test_per_process_keys_add_up_for_the_pids_asked() -> None:
    def key(tgid: int, nr: int, bucket: int) -> int:
        return tgid << 32 | nr << KEY_BITS | bucket

    items = [(key(10, 257, 5), 3), (key(11, 257, 5), 4), (key(11, 0, 7), 1), (key(12, 257, 5), 9)]
    assert add_items(items, {10, 11}) == {257: {5: 7}, 0: {7: 1}}
    assert add_items(items, {99}) == {}
