"""``ringtool mark`` (or a trace start) in another PID namespace that shares the bpffs
(a container with the host's /sys/fs/bpf) cannot see the host's traces' processes: it
leaves their marker directories alone (ringtool/trace/reading/marks.py), and the host's
markers keep reaching them."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess

import pytest

from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.procs import run_ringtool
from tests.helpers.trace import Trace, marker_dir

pytestmark = pytest.mark.kernel


def test_a_mark_in_another_pid_namespace_leaves_a_live_trace_alone() -> None:
    tag = secrets.token_hex(6)
    t = Trace("--json", "--events", "exec")
    try:
        where = marker_dir(t)
        inside = subprocess.run(
            ["unshare", "-p", "-f", "--mount-proc", *RINGTOOL, "mark", f"container {tag}"],
            cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        # it sees no trace it can tell is running (other tests' traces alike)
        assert inside.returncode == 1, inside.stderr
        assert "no ringtool trace is running" in inside.stderr
        assert os.path.isdir(where), "the live trace's marker directory was removed"
        after = run_ringtool("mark", f"host {tag}")
        assert after.returncode == 0, after.stderr
    finally:
        t.signal(signal.SIGINT)
    lines, _ = t.finish()
    events = [json.loads(line) for line in lines if tag in line]
    assert [e["text"] for e in events if e["type"] == "mark"] == [f"host {tag}"]
