"""``ringtool bench primitives``: one row per block, in the order of
:data:`~ringtool.bench.primitives.PRIMITIVES`, each with counts and times of the right
kind (timings are reported, never asserted), and the ring buffer block's records all
read back (a failed reservation would make it look cheaper than it is)."""

from __future__ import annotations

import json
import subprocess

import pytest

from ringtool.bench.primitives import PRIMITIVES
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


def test_json_rows_cover_every_block_and_lose_no_record() -> None:
    rows = [json.loads(line) for line in _bench("--json").splitlines()]
    assert [r["primitive"] for r in rows] == list(PRIMITIVES)
    by_name = {r["primitive"]: r for r in rows}
    for row in rows:
        assert row["bench"] == "bpf-primitive" and row["does"] == PRIMITIVES[row["primitive"]]
        assert isinstance(row["runs"], int) and row["runs"] > 0, row  # the loop ran each
        assert 0 < row["min_ns"] <= row["ns_per_run"] <= row["max_ns"], row
        assert row["added_ns"] == pytest.approx(row["ns_per_run"] - by_name["empty"]["ns_per_run"],
                                                abs=0.15)  # fmt: skip
    assert by_name["empty"]["added_ns"] == 0
    assert by_name["ringbuf"]["undelivered"] == 0


def test_table_has_a_line_per_block() -> None:
    lines = _bench().splitlines()
    assert len(lines) == len(PRIMITIVES)  # no consumer header: these rows have none
    for line, name in zip(lines, PRIMITIVES, strict=True):
        assert line.split()[:2] == ["bpf-primitive", name] and " ns " in line, line
