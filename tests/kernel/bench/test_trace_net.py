"""``ringtool bench trace``'s ``trace-net-cost`` rows (:mod:`ringtool.bench.trace_net`),
small: each variant of the net source's TC program ran on its test packet and was
timed, and the owners lookup was compiled in where it should be; the tcp source's
runs were measured with and without publishing owners. Numbers of the right kind
only: timings are reported, never asserted."""

from __future__ import annotations

import pytest

from ringtool.bench.trace_net import LoopbackTalk, packet_cost, tcp_cost

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def test_packet_cost_rows() -> None:
    rows = packet_cost(2_000, cpu=0, rounds=1)
    assert [r["owners"] for r in rows] == ["none", "miss", "hit"]
    for row in rows:
        assert row["bench"] == "trace-net-cost" and row["runs"] == 2_000, row
        assert _number(row["ns_per_packet"]) and float(row["ns_per_packet"]) > 0, row
    assert rows[0]["ratio_to_none"] == 1.0


def test_tcp_cost_rows() -> None:
    alone, both = tcp_cost(0.3, trace_cpu=1, producer_cpu=0, rounds=1)
    assert (alone["events"], both["events"]) == ("tcp", "net,tcp")
    for row in (alone, both):
        assert isinstance(row["connections"], int) and row["connections"] > 0, row
        assert _number(row["tcp_ns_per_conn"]), row
    assert "net_runs" in both and "net_runs" not in alone  # net,tcp ran its TC programs
    # each connection ran the tcp programs (its state changes, its sends and receives)
    for row in (alone, both):
        assert row["tcp_runs"] >= 3 * row["connections"], row
    assert _number(both["tcp_ns_per_conn_ratio"]), both


def test_loopback_talk_makes_connections() -> None:
    assert LoopbackTalk(0, 0.2).run() > 0
