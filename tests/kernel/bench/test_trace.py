"""``ringtool bench trace --json``: every line a check outside the project reads is
there, once, with numbers of the right kind (never timings: those are reported, not
asserted), and the e2e counts account for every event the producer made."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ringtool.bench.trace import START_ROUNDS, starts_beside_peers
from ringtool.bench.trace_proc import build_loop, run_loop
from ringtool.bench.trace_start import starters
from ringtool.trace.reading.sources import RING_SOURCES
from tests.helpers.paths import RINGTOOL

# host_only: the bench's output (timings in an emulated VM mean nothing); the trace
# sources it loads run on every kernel elsewhere (CI runs it on the host, not again in
# the emulated VM).
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

E2E_KEYS = ("offered_per_s", "delivered_per_s", "dropped", "consumer_ns_per_event")
OUTPUTS = {"json", "columns", "tui", "export", "quiet", "record", "json-record"}


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def test_bench_trace_json_lines() -> None:
    proc = subprocess.run(
        [*RINGTOOL, "bench", "trace", "--json", "--seconds",
         "0.5"], capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    by_bench: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_bench.setdefault(str(row["bench"]), []).append(row)
    assert set(by_bench) == {"trace-e2e", "trace-overhead", "trace-idle", "trace-startup",
                             "trace-source-cost", "trace-cpuwait", "trace-net-cost",
                             "trace-tui-cpu", "trace-record-mix"}  # fmt: skip
    (tui,) = by_bench["trace-tui-cpu"]  # the real dashboard's CPU beside --json's
    for key in ("tui_cpu_pct", "json_cpu_pct", "tui_idle_cpu_pct"):
        assert _number(tui[key]) and float(tui[key]) >= 0, (key, tui)  # type: ignore[arg-type]
    # it drew to its terminal, and both runs got the paced producer's events
    assert isinstance(tui["tui_bytes_per_s"], int) and tui["tui_bytes_per_s"] > 0, tui
    assert isinstance(tui["tui_delivered"], int) and tui["tui_delivered"] > 0, tui
    assert isinstance(tui["json_delivered"], int) and tui["json_delivered"] > 0, tui
    (switch,) = by_bench["trace-cpuwait"]  # the cpuwait source's cost per context switch
    for key, value in switch.items():
        if key.endswith("_ns_per_roundtrip"):
            assert _number(value) and float(value) > 0, (key, switch)  # type: ignore[arg-type]
        elif key.endswith("_added_ns_per_switch"):
            assert _number(value), (key, switch)

    e2e = by_bench["trace-e2e"]
    assert sorted(str(r["output"]) for r in e2e) == sorted(OUTPUTS)
    for row in e2e:
        assert "skipped" not in row, row  # setup installs nats-server: export runs
        for key in ("offered_per_s", "delivered_per_s", "dropped"):
            value = row[key]
            assert isinstance(value, int) and value >= 0, (key, row)
        offered_per_s = row["offered_per_s"]
        assert isinstance(offered_per_s, int) and offered_per_s > 0, row
        assert _number(row["consumer_ns_per_event"]), row
        # every openat the loop made reached the output or was counted as a drop
        delivered, dropped, offered = row["delivered"], row["dropped"], row["offered"]
        assert isinstance(delivered, int) and isinstance(dropped, int)
        assert isinstance(offered, int) and delivered + dropped >= offered, row
        if row["output"] in ("record", "json-record"):  # what an event takes on disk, and
            # what recording adds to the output beside it
            assert _number(row["bytes_per_event"]) and float(row["bytes_per_event"]) > 0, row  # type: ignore[arg-type]
            assert _number(row["record_added_ns_per_event"]), row
    (mix,) = by_bench["trace-record-mix"]  # a typical mix: opens, failed ones, exec, fork, exit
    assert _number(mix["bytes_per_event"]) and float(mix["bytes_per_event"]) > 0, mix  # type: ignore[arg-type]
    by_type = mix["by_type"]
    assert isinstance(by_type, dict) and {"open", "exec", "fork", "exit"} <= set(by_type), mix

    (over,) = by_bench["trace-overhead"]
    for key in (
        "untraced_ns_per_syscall",
        "traced_ns_per_syscall",
        "empty_ns_per_syscall",
        "stats_ns_per_syscall",
    ):
        assert _number(over[key]) and float(over[key]) > 0, (key, over)  # type: ignore[arg-type]
    # the floor of the same run (its arithmetic: tests/kernel/bench/test_trace_floor.py)
    assert _number(over["floor_ns"]) and _number(over["above_empty_ns"]), over
    assert _number(over["floor_ratio"]) or (over["floor_ratio"] is None
                                            and float(over["floor_ns"]) <= 0), over  # type: ignore[arg-type]  # fmt: skip
    (idle,) = by_bench["trace-idle"]
    assert _number(idle["cpu_pct"]) and float(idle["cpu_pct"]) >= 0  # type: ignore[arg-type]
    starts = {str(row["cache"]): row for row in by_bench["trace-startup"] if "seconds" in row}
    assert set(starts) == {"off", "warm"}  # compiled, and from the program cache
    for start in starts.values():
        assert _number(start["seconds"]) and float(start["seconds"]) > 0  # type: ignore[arg-type]
    peers = [row for row in by_bench["trace-startup"] if "seconds" not in row]
    _check_peer_starts(peers, START_ROUNDS)
    # every RINGBUF source's programs ran and were measured, disk's too (its O_DIRECT
    # reads are block requests)
    cost = {str(r["source"]): r for r in by_bench["trace-source-cost"]}
    assert set(RING_SOURCES) <= set(cost), cost
    for source in ("open", "exec", "syscalls", "disk"):
        assert _number(cost[source]["avg_ns"]) and _number(cost[source]["bpf_ns_per_event"]), (
            source, cost[source])  # fmt: skip
    net = by_bench["trace-net-cost"]  # its figures: tests/kernel/bench/test_trace_net.py
    assert [r.get("owners", r.get("events")) for r in net] == ["none", "miss", "hit", "tcp",
                                                               "net,tcp"]  # fmt: skip


def _check_peer_starts(rows: list[dict[str, object]], runs: int) -> None:
    """ringtool's start (default sources, cache warm) and each peer's, or why a peer
    was skipped; a start line before the first event."""
    assert [r["tracer"] for r in rows] == [s.tracer.name for s in starters()]
    ringtool, *peers = rows
    assert ringtool["sources"] == "default" and ringtool["cache"] == "warm", ringtool
    stale = ringtool["stale_bytecode"]  # modules compiled at every start: said, not judged
    assert isinstance(stale, int) and stale >= 0, ringtool
    for row in rows:
        if "skipped" in row:
            assert row is not ringtool and "apt-get install" in str(row["skipped"]), row
            continue
        assert row["runs"] == runs, row
        low, mid, high = (float(row[k]) for k in ("start_min_s", "start_s", "start_max_s"))  # type: ignore[arg-type]
        assert 0 < low <= mid <= high, row
        assert _number(row["first_event_s"]) and float(row["first_event_s"]) >= low, row  # type: ignore[arg-type]
        assert _number(row["start_cpu_s"]) and float(row["start_cpu_s"]) >= 0, row  # type: ignore[arg-type]
    for row in peers:
        if "skipped" not in row:
            ratio = float(ringtool["start_s"]) / float(row["start_s"])  # type: ignore[arg-type]
            assert row["ringtool_ratio"] == round(ratio, 1), row


def test_starts_beside_the_peers(tmp_path: Path) -> None:
    binary = build_loop(tmp_path)
    _check_peer_starts(starts_beside_peers(binary, 2), 2)  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", ["openexec", "mix"])
def test_loop_counts_its_syscalls(tmp_path: Path, mode: str) -> None:
    binary = build_loop(tmp_path)
    result = run_loop(binary, mode, -1, 0.3)
    assert result.iterations > 0 and result.iterations % 256 == 0
    assert result.execs == result.iterations // 64
    assert result.cpu_ns > 0 and result.elapsed_ns >= 0.3e9


def test_paced_loop_keeps_to_its_rate(tmp_path: Path) -> None:
    """Paced, the loop makes at most RATE iterations a second of its run (each waits
    for its time; what it could not make in time is not made up past the end)."""
    binary = build_loop(tmp_path)
    result = run_loop(binary, "open", -1, 0.3, rate=200.0)
    assert 0 < result.iterations <= 60 and result.execs == 0


@pytest.mark.parametrize("seconds", ["0", "-1", "abc", "601"])
def test_bad_seconds_is_a_usage_error(seconds: str) -> None:
    proc = subprocess.run(
        [*RINGTOOL, "bench", "trace", "--seconds", seconds],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--seconds" in proc.stderr and "Traceback" not in proc.stderr
