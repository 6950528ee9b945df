"""The dashboard's machine-wide panels on hand-built records (no kernel): the disks'
sums per device and the connections kept per order equal what the records hold, the
panels are on screen while their sources run and fit 80x24 and 120x40, ``o`` cycles
the connections' order, a pause freezes them, and a hostile comm is shown escaped."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.dashboard.tui_conns import (
    KEEP,
    ORDER_FIELD,
    Connections,
    connections,
    conns_table,
    lifetime,
    open_connections,
    ordered,
    prune,
)
from ringtool.trace.dashboard.tui_disks import Disks, disks_table, op_letters, per_device
from ringtool.trace.dashboard.tui_help import KEYS, LEGEND
from ringtool.trace.dashboard.tui_view import ACTIONS, CONN_ORDERS, ViewState
from ringtool.trace.reading.latency_buckets import bucket_of
from ringtool.trace.reading.tcp_conns import OpenConns
from tests.helpers.machine_records import DISK, LAYOUT, TCP, disk_batch, tcp_batch, v4
from tests.helpers.records import SETTINGS
from tests.helpers.stats import new_stats
from tests.helpers.tui import frame

Array = np.ndarray[Any, Any]
LOOP0, SDA = 7 << 20, 8 << 20
RWBS = [b"R", b"W", b"WS", b"FWS", b"RA", b"FN", b"F", b"D", b"DE", b"N", b"", b"WFS"]

requests = st.lists(
    st.tuples(st.sampled_from([LOOP0, SDA, 259 << 20 | 1]), st.integers(0, 2**32 - 1),
              st.sampled_from(RWBS)),
    max_size=60,
)  # fmt: skip


@SETTINGS
@given(st.lists(requests, min_size=1, max_size=4))
def test_disk_sums_per_device_are_the_records_sums(batches: list[list[Any]]) -> None:
    disks = Disks([DISK], LAYOUT.views[DISK])
    for batch in batches:
        arr = disk_batch([r[0] for r in batch], [r[1] for r in batch], [r[2] for r in batch])
        arr = np.concatenate([arr, np.zeros(2, dtype=LAYOUT.event)])  # other types: not counted
        disks.add_batch(arr)
    disks.tick({}, now=12.0, start=10.0)  # rates over 2 s
    every = [r for batch in batches for r in batch]
    for dev in {r[0] for r in every}:
        mine = [r for r in every if r[0] == dev]
        read = sum(n for _, n, rwbs in mine if _op(rwbs) == "R")
        written = sum(n for _, n, rwbs in mine if _op(rwbs) == "W")
        row = next(r for r in disks.rows if r.dev == dev)
        assert (row.iops, row.read_bps, row.write_bps) == (len(mine) / 2, read / 2, written / 2)
    assert {r.dev for r in disks.rows} == {r[0] for r in every}


def _op(rwbs: bytes) -> str:
    """The operation letter as ringtool.event.disk_data.op reads it, one record at a time."""
    if len(rwbs) >= 2 and rwbs[:1] == b"F" and rwbs[1:2] in (b"R", b"W", b"D", b"F", b"N"):
        rwbs = rwbs[1:]
    return rwbs[:1].decode()


def test_op_letters_read_a_preflush_as_its_operation() -> None:
    rec = disk_batch([1] * 5, [1] * 5, [b"FWS", b"F", b"FR", b"WS", b""]).view(LAYOUT.views[DISK])
    assert bytes(op_letters(rec["rwbs"]).astype(np.uint8)) == b"WFRW\0"
    sums = per_device(rec)
    assert sums.devs.tolist() == [1] and sums.requests.tolist() == [5]


connection = st.tuples(
    st.integers(1, 10**6),  # end ts (µs)
    st.integers(0, 10**6),  # duration (µs), may be longer than ts (then it began at 0)
    st.integers(0, 2**40),  # tx
    st.integers(0, 2**40),  # rx
)


@SETTINGS
@given(st.lists(st.lists(connection, max_size=40), min_size=1, max_size=5), st.integers(1, 12))
def test_pruned_connections_keep_each_orders_top(batches: list[list[Any]], keep: int) -> None:
    kept, every = connections(_tcp([]).view(LAYOUT.views[TCP])), []
    for batch in batches:
        new = connections(_tcp(batch).view(LAYOUT.views[TCP]))
        kept = prune(np.concatenate([kept, new]), keep)
        every.append(new)
    whole = np.concatenate(every)
    for order, name in ORDER_FIELD.items():
        n = min(keep, len(whole))
        want = np.sort(whole[name])[::-1][:n]
        assert ordered(kept, order, n)[name].tolist() == want.tolist(), order
    assert len(kept) <= 3 * keep


def _tcp(batch: list[Any]) -> Array:
    n = len(batch)
    return tcp_batch(pid=[7] * n, comm=[b"c"] * n, ts=[b[0] * 1000 for b in batch],
                     dur=[b[1] * 1000 for b in batch], tx=[b[2] for b in batch],
                     rx=[b[3] for b in batch])  # fmt: skip


def test_connections_are_bytes_start_and_duration() -> None:
    arr = tcp_batch(pid=[5, 6], comm=[b"curl", b"sshd"], ts=[10**9, 5 * 10**9],
                    dur=[10**8, 4 * 10**9], tx=[100, 7], rx=[3_000_000, 9])  # fmt: skip
    c = connections(arr.view(LAYOUT.views[TCP]))
    assert c["bytes"].tolist() == [3_000_100, 16]
    assert c["start"].tolist() == [9 * 10**8, 10**9]
    assert ordered(c, "busiest", 5)["pid"].tolist() == [5, 6]
    assert ordered(c, "longest-lived", 5)["pid"].tolist() == [6, 5]
    assert ordered(c, "newest", 5)["pid"].tolist() == [6, 5]
    assert ordered(c, "busiest", 5, "ssh")["pid"].tolist() == [6]
    assert lifetime(1_500_000) == "1.50ms" and lifetime(3725 * 10**9) == "1:02:05"


def _tui(width: int, height: int, sources: list[str]) -> tuple[TraceTui, io.StringIO]:
    buf = io.StringIO()
    console = Console(file=buf, width=width, height=height, color_system=None)
    tui = TraceTui(Decoder(load_layout()), console=console, input_fd=-1)
    tui.start(sources, [])
    tui.batch(Records(tcp_batch(
        pid=[4242, 4243, 4244], comm=[b"rtfetch", b"evil\x1b[2J", b"sshd"],
        ts=[3 * 10**9, 4 * 10**9, 5 * 10**9], dur=[10**9, 10**6, 2 * 10**9],
        tx=[120, 5, 10], rx=[3_000_245, 8, 20], rport=[8123, 443, 22], remote="127.0.0.1",
    )))  # fmt: skip
    tui.batch(Records(disk_batch([LOOP0] * 3 + [SDA], [65536] * 4, [b"WS", b"WS", b"R", b"R"])))
    st = new_stats()
    st.tick(disk_hist={LOOP0: {bucket_of(250_000): 99, bucket_of(9_000_000): 1}}, now=1.0)
    tui.stats(st)
    return tui, buf


def _fits(text: str, width: int, height: int) -> list[str]:
    lines = text.splitlines()
    assert len(lines) == height and all(len(ln) <= width for ln in lines), text
    return lines


def test_panels_fit_80x24_and_120x40() -> None:
    for width, height in ((80, 24), (120, 40)):
        tui, buf = _tui(width, height, ["exec", "tcp", "disk"])
        lines = _fits(frame(tui, buf), width, height)
        row = next(ln for ln in lines if "127.0.0.1:8123" in ln)
        assert "rtfetch" in row and "3.00M" in row, row  # its bytes received
        disk = next(ln for ln in lines if " loop0 " in ln)
        assert disk.split()[-4:] == ["3", "65.5k", "131k", "250µs"], disk  # 1 s interval
        assert any("tcp: busiest (o)" in ln for ln in lines)
        assert not any("\x1b" in ln for ln in lines)
        assert any("evil\\x1b[2J" in ln for ln in lines) or height == 24  # escaped, not run
    tui, buf = _tui(120, 40, ["exec", "tcp"])  # the whole row: every column
    assert all(n in frame(tui, buf) for n in ("LOCAL", "PID", "DUR", "TX", "127.0.0.1:40000"))


def test_panels_only_while_their_source_runs() -> None:
    text = frame(*_tui(80, 24, ["exec", "open", "syscalls"]))
    assert "tcp: busiest" not in text and "disks" not in text
    text = frame(*_tui(80, 24, ["tcp"]))
    assert "tcp: busiest" in text and "disks" not in text
    text = frame(*_tui(80, 24, ["disk"]))
    assert "tcp: busiest" not in text and "loop0" in text


def test_o_cycles_the_order_and_p_freezes_the_panels() -> None:
    tui, buf = _tui(120, 40, ["tcp"])
    first = []
    for order in CONN_ORDERS:
        text = frame(tui, buf)
        assert f"tcp: {order} (o)" in text
        rows = [ln for ln in text.splitlines() if "127.0.0.1:" in ln]
        first.append(rows[0].split()[1])
        tui.view.key("o")
    assert first == ["rtfetch", "evil\\x1b[2J", "sshd"]  # bytes, start, duration
    assert f"tcp: {CONN_ORDERS[0]} (o)" in frame(tui, buf)
    tui.view.key("p")
    before = frame(tui, buf)
    tui.batch(Records(tcp_batch(pid=[9], comm=[b"late"], ts=[9 * 10**9], dur=[1], tx=[10**9],
                                rx=[0])))  # fmt: skip
    assert frame(tui, buf) == before
    tui.view.key("p")
    assert "late" in frame(tui, buf)


def test_filter_picks_the_owners_and_the_disks_say_all_processes() -> None:
    tui, buf = _tui(120, 40, ["tcp", "disk"])
    tui.view.filter = "sshd"
    text = frame(tui, buf)
    assert "127.0.0.1:22" in text and "rtfetch" not in text.split("tcp: busiest")[1]
    assert "disks (all processes)" in text


def test_every_new_key_and_column_has_a_help_line() -> None:
    assert ACTIONS["o"] == ACTIONS["O"] == "_conn_order"
    assert any(k.split() == ["o", "O"] for k, _ in KEYS)
    conns = Connections([TCP], LAYOUT.views[TCP])
    conns.add_batch(tcp_batch(pid=[1], comm=[b"a"], ts=[1], dur=[1], tx=[1], rx=[1]))
    tables = (conns_table(conns.kept, 1, None, ViewState(), 5, 200),
              disks_table([], ViewState(), 5))  # fmt: skip
    headers = {str(c.header) for t in tables if isinstance(t, Table) for c in t.columns}
    assert {"LOCAL", "REMOTE", "TX", "RX", "DUR", "DISK", "IOPS", "RD B/S", "WR B/S"} <= headers
    assert headers <= {name for name, _ in LEGEND}, headers - {name for name, _ in LEGEND}


def test_keep_is_more_than_the_tallest_panel() -> None:
    from ringtool.trace.dashboard.tui_machine import MAX_ROWS

    assert KEEP > MAX_ROWS


def _open_conns(lay: Any, now_ns: int) -> Array:
    """Two entries of the tcp source's conns hash: an owned active one, a passive one
    whose owner is not known yet."""
    conns = np.zeros(2, dtype=lay.dtypes["trace_tcp_conn"])
    conns["start_ns"] = [now_ns - 3725 * 10**9, now_ns - 5 * 10**9]
    conns["pid"], conns["comm"], conns["owned"] = [77, 0], [b"rthold", b"stale"], [1, 0]
    conns["saddr"], conns["daddr"] = v4("127.0.0.1"), v4("10.9.8.7")
    conns["sport"], conns["dport"] = [40001, 8080], [8080, 50000]
    return conns


def test_open_connections_show_what_the_kernel_knows_of_them() -> None:
    now = 10**13
    c = open_connections(_open_conns(LAYOUT, now), now)
    assert c["dur"].tolist() == [3725 * 10**9, 5 * 10**9] and c["open"].tolist() == [1, 1]
    assert c["pid"].tolist() == [77, 0] and c["comm"].tolist() == [b"rthold", b""]
    tui, buf = _tui(120, 40, ["tcp"])
    st = new_stats()
    st.tick(tcp_open=OpenConns(_open_conns(LAYOUT, now), now), now=1.0)
    assert tui.wants_conns
    tui.stats(st)
    text = frame(tui, buf)
    assert "tcp: busiest (o)  3 closed, 2 open" in text
    hold = next(ln for ln in text.splitlines() if "rthold" in ln).split()
    assert hold[0] == "77" and hold[-3:] == ["-", "-", "1:02:05"], hold  # no bytes yet
    passive = next(ln for ln in text.splitlines() if "10.9.8.7:50000" in ln).split()
    assert passive[:2] == ["-", "127.0.0.1:8080"], passive  # no owner yet, not "stale"
    tui.view.key("o")
    tui.view.key("o")  # longest-lived: the open one first
    rows = [ln for ln in frame(tui, buf).splitlines() if "127.0.0.1:" in ln]
    assert "rthold" in rows[0]


def test_open_connections_are_read_only_while_shown_and_unfiltered() -> None:
    tui, _ = _tui(120, 40, ["tcp"])
    assert tui.wants_conns
    tui.view.key("c")  # the cost panel covers it
    assert not tui.wants_conns
    tui.view.key("esc")
    tui.view.key("?")
    assert not tui.wants_conns
    assert not _tui(120, 40, ["exec", "disk"])[0].wants_conns
    filtered = TraceTui(Decoder(LAYOUT), console=Console(file=io.StringIO()), input_fd=-1,
                        filters=("--events tcp", "-c curl"))  # fmt: skip
    filtered.start(["tcp"], [])
    assert not filtered.wants_conns  # the kernel's hash has every process's


def test_a_long_comm_is_cut_rather_than_left_out_at_80_columns() -> None:
    tui, buf = _tui(80, 24, ["tcp", "disk"])
    conn = tcp_batch(pid=[5], comm=[b"rtio1664e356s"], ts=[6 * 10**9], dur=[1], tx=[9 * 10**6],
                     rx=[0], rport=[9999], remote="127.0.0.1")  # fmt: skip
    tui.batch(Records(conn))
    row = next(ln for ln in frame(tui, buf).splitlines() if "127.0.0.1:9999" in ln)
    assert row.split()[:2] == ["rtio166…", "127.0.0.1:9999"], row
