"""``-p`` that matches no live process: said once on stderr, and the trace runs (the
process may come); stdout stays events and the summary."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT

pytestmark = pytest.mark.kernel


def _free_pid() -> int:
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    return next(p for p in range(pid_max - 1, 1, -1) if not Path(f"/proc/{p}").exists())


def test_a_pid_not_running_is_said_once_and_the_trace_goes_on() -> None:
    pid = _free_pid()
    res = subprocess.run(
        [*RINGTOOL, "trace", "--json", "-d", "2", "--interval", "0.5", "-p", str(pid)],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    note = f"ringtool trace: -p {pid}: no such process now; tracing in case it appears"
    assert res.stderr.splitlines().count(note) == 1, res.stderr
    assert "Traceback" not in res.stderr
    (summary,) = map(json.loads, res.stdout.splitlines())  # no events of it: the summary
    assert summary["type"] == "summary" and summary["events"] == 0
    assert summary["duration_s"] >= 2
