"""``ringtool bench trace --json``: every line a check outside the project reads is
there, once, with numbers of the right kind (never timings: those are reported, not
asserted), and the e2e counts account for every event the producer made."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ringtool.bench.trace_proc import build_loop, run_loop
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
                             "trace-source-cost", "trace-cpuwait",
                             "trace-record-mix"}  # fmt: skip
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
    (idle,) = by_bench["trace-idle"]
    assert _number(idle["cpu_pct"]) and float(idle["cpu_pct"]) >= 0  # type: ignore[arg-type]
    starts = {str(row["cache"]): row for row in by_bench["trace-startup"]}
    assert set(starts) == {"off", "warm"}  # compiled, and from the program cache
    for start in starts.values():
        assert _number(start["seconds"]) and float(start["seconds"]) > 0  # type: ignore[arg-type]
    # every RINGBUF source's programs ran and were measured, disk's too (its O_DIRECT
    # reads are block requests)
    cost = {str(r["source"]): r for r in by_bench["trace-source-cost"]}
    assert set(RING_SOURCES) <= set(cost), cost
    for source in ("open", "exec", "syscalls", "disk"):
        assert _number(cost[source]["avg_ns"]) and _number(cost[source]["bpf_ns_per_event"]), (
            source, cost[source])  # fmt: skip


@pytest.mark.parametrize("mode", ["openexec", "mix"])
def test_loop_counts_its_syscalls(tmp_path: Path, mode: str) -> None:
    binary = build_loop(tmp_path)
    result = run_loop(binary, mode, -1, 0.3)
    assert result.iterations > 0 and result.iterations % 256 == 0
    assert result.execs == result.iterations // 64
    assert result.cpu_ns > 0 and result.elapsed_ns >= 0.3e9


@pytest.mark.parametrize("seconds", ["0", "-1", "abc", "601"])
def test_bad_seconds_is_a_usage_error(seconds: str) -> None:
    proc = subprocess.run(
        [*RINGTOOL, "bench", "trace", "--seconds", seconds],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--seconds" in proc.stderr and "Traceback" not in proc.stderr
