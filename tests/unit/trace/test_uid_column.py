"""The uid in the text outputs: the columns' UID, the dashboard's where it fits."""

from __future__ import annotations

import io

from rich.console import Console

from ringtool.trace.dashboard.tui_events import events_table
from ringtool.trace.dashboard.tui_view import ViewState
from ringtool.trace.writers.output_columns import format_event

EV = {"type": "open", "ts": 0.0, "cpu": 1, "pid": 42, "tid": 42, "comm": "cat", "uid": 4321,
      "gid": 5, "path": "/etc/x", "flags": 0, "mode": 0, "ret": 3, "syscall": "openat"}  # fmt: skip


def _text(table: object, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None)
    console.print(table)
    return console.file.getvalue()  # type: ignore[attr-defined, no-any-return]


def test_columns_show_the_uid_and_a_dash_without_one() -> None:
    assert format_event(EV, None).split()[2:5] == ["42", "4321", "cat"]
    net = {"type": "net", "ts": 0.0, "cpu": 0, "pid": 0, "tid": 0, "comm": "",
           "dir": "egress", "proto": "udp", "src": "::1", "sport": 1, "dst": "::1",
           "dport": 2, "len": 9}  # fmt: skip
    assert format_event(net, None).split()[2:4] == ["0", "-"]


def test_dashboard_shows_the_uid_only_where_it_fits() -> None:
    wide = _text(events_table([EV], ViewState(), 5, uid=True), 120)
    assert "UID" in wide and "4321" in wide and "/etc/x O_RDONLY = 3 (openat)" in wide
    narrow = _text(events_table([EV], ViewState(), 5, uid=False), 80)
    assert "UID" not in narrow and "4321" not in narrow and "/etc/x O_RDONLY" in narrow
