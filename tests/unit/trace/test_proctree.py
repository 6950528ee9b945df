"""The drill-down's children: fork records counted per parent, bounded, shown as data."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.report import proctree
from ringtool.trace.report.proctree import ProcessTree
from ringtool.trace.report.stats import TraceStats


def _records(rows: list[tuple[str, int, int]]) -> np.ndarray:
    """(type, pid, aux) records; a fork's aux is the child's pid."""
    lay = load_layout()
    arr = np.zeros(len(rows), dtype=lay.event)
    for i, (typ, pid, aux) in enumerate(rows):
        arr[i]["h"]["type"] = lay.type_id(typ)
        arr[i]["h"]["pid"] = pid
        arr[i]["aux"] = aux
    return arr


def test_forks_of_a_batch_become_children_in_order() -> None:
    lay = load_layout()
    st = TraceStats(lay.type_names, 1, ["exec"])
    st.add_batch(_records([("fork", 10, 11), ("open", 10, 999), ("fork", 10, 12), ("fork", 20, 21),
                           ("syscall", 10, 257)]))  # fmt: skip
    st.add_batch(_records([("exec", 11, 0), ("fork", 10, 13)]))
    assert st.tree.children(10) == [11, 12, 13]  # opens' and syscalls' aux are not pids
    assert st.tree.children(20) == [21] and st.tree.children(11) == []
    assert st.tree.forks == {10: 3, 20: 1}


def test_bounds_keep_the_newest() -> None:
    t = ProcessTree(fork_type=3)
    for child in range(1, proctree.PER_PARENT + 11):
        t.add(1, child)
    kids = t.children(1)
    assert len(kids) == proctree.PER_PARENT and kids[-1] == proctree.PER_PARENT + 10
    assert kids[0] == 11 and t.forks[1] == proctree.PER_PARENT + 10  # the count is exact
    for parent in range(2, proctree.PARENTS + 3):
        t.add(parent, 1)
    assert t.children(1) == [] and t.children(proctree.PARENTS + 2) == [1]  # oldest gone


def test_drill_down_lists_children_as_data() -> None:
    lay = load_layout()
    buf = io.StringIO()
    console = Console(file=buf, width=120, height=40, color_system=None)
    tui = TraceTui(Decoder(lay), console=console, input_fd=-1)
    tui.start(["exec", "open", "syscalls"], [])
    st = TraceStats(lay.type_names, 1, ["exec", "open", "syscalls"], start=10.0)
    st._count_proc(42, "shell", 1)
    st._count_proc(43, "[bold]x[/bold]\x1b[2J", 1)  # a child named like markup + ESC
    st.add_batch(_records([("fork", 42, 43), ("fork", 42, 44)]))
    tui.view.drill = 42
    st.tick(drill=(42, {}), now=11.0)
    tui.stats(st)
    console.print(tui.render(), height=40)
    text = buf.getvalue()
    assert "children (2 forks, newest first): 44, 43 [bold]x[/bold]\\x1b[2J" in text, text
    assert "\x1b" not in text
    tui.view.drill = 44
    buf.seek(0)
    buf.truncate()
    console.print(tui.render(), height=40)
    assert "children: none seen since the trace started" in buf.getvalue()
