"""``ringtool bench primitives``: one row per block, in the order of
:data:`~ringtool.bench.primitives.PRIMITIVES`, each with counts and times of the right
kind (timings are reported, never asserted), and every run of the ring buffer block
accounted for: a record read back or a failed reservation counted (a failed one would
make the block look cheaper than it is)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ringtool.bench.primitives import NEED_TASK_STORAGE, PRIMITIVES
from ringtool.programs.kernel_features import has_task_storage
from tests.helpers.paths import RINGTOOL

# host_only: timings in an emulated VM mean nothing (as tests/kernel/bench/test_trace.py)
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


def _bench(*extra: str) -> str:
    proc = subprocess.run(
        [*RINGTOOL, "bench", "primitives", "--quick", "--repeats", "2", *extra],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    return proc.stdout


def test_json_rows_cover_every_block_and_account_for_every_run() -> None:
    rows = [json.loads(line) for line in _bench("--json").splitlines()]
    assert [r["primitive"] for r in rows] == list(PRIMITIVES)
    by_name = {r["primitive"]: r for r in rows}
    for row in rows:
        assert row["bench"] == "bpf-primitive" and row["does"] == PRIMITIVES[row["primitive"]]
        if row["primitive"] in NEED_TASK_STORAGE and not has_task_storage():
            assert "skipped" in row and "ns_per_run" not in row, row
            continue
        assert "skipped" not in row, row
        assert isinstance(row["runs"], int) and row["runs"] > 0, row  # the loop ran each
        assert 0 < row["min_ns"] <= row["ns_per_run"] <= row["max_ns"], row
        assert row["added_ns"] == pytest.approx(
            row["ns_per_run"] - by_name["empty"]["ns_per_run"], abs=0.2
        )
    assert by_name["empty"]["added_ns"] == 0
    ring = by_name["ringbuf"]
    assert ring["unaccounted"] == 0, ring
    assert ring["records"] + ring["reserve_failed"] == ring["runs"], ring
    assert ring["records"] > 0, ring


def test_table_has_a_line_per_block() -> None:
    lines = _bench().splitlines()
    assert len(lines) == len(PRIMITIVES)  # no consumer header: these rows have none
    for line, name in zip(lines, PRIMITIVES, strict=True):
        assert line.split()[:2] == ["bpf-primitive", name], line
        assert " ns " in line or "skipped:" in line, line
    (ring,) = [line for line in lines if line.split()[1] == "ringbuf"]
    assert "unaccounted 0)" in ring, ring


def test_blocks_without_task_storage_are_skipped_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the kernel has no per-task storage for tracing programs, the program is
    compiled without those blocks and their rows say why (the rest are measured)."""
    from ringtool.bench import primitives

    monkeypatch.setattr(primitives, "has_task_storage", lambda: False)
    rows = {r["primitive"]: r for r in primitives.run(repeats=1, quick=True)}
    assert list(rows) == list(PRIMITIVES)
    for name in NEED_TASK_STORAGE:
        assert rows[name]["skipped"] == primitives.SKIPPED and "runs" not in rows[name]
    assert all(rows[n]["runs"] > 0 for n in PRIMITIVES if n not in NEED_TASK_STORAGE)
