"""``trace --export``'s publisher process: killed mid-run it is one line and exact
counts, and no exit path of the trace (end of ``--duration``, Ctrl-C, ``kill -TERM``,
``kill -KILL``) leaves it behind."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from tests.helpers.export import finish, notes, start_trace, wait_exported, work
from tests.helpers.servers import NatsServer
from tests.helpers.stream_check import check_invariant, read_stream
from tests.helpers.trace import Worker, hot_file, unique_comm

# host_only: the publisher process's lifetime and counts: ringtool's own processes,
# nothing of the kernel's version (CI runs it on the host, not again in the emulated
# VM).
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

DIED = re.compile(
    r"export: the publisher process died \(signal 9\); (\d+) events handed over were not published"
)


def publisher_pid(trace_pid: int) -> int:
    """The pid of ``trace_pid``'s publisher process (its child running publisher_proc)."""
    for task in Path(f"/proc/{trace_pid}/task").iterdir():
        for pid in (task / "children").read_text().split():
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"ringtool.export.publisher_proc" in cmd:
                return int(pid)
    raise AssertionError(f"trace {trace_pid} has no publisher process")


def gone(pid: int, timeout: float = 10) -> bool:
    """``pid`` no longer runs (absent or a zombie) within ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


def test_publisher_runs_apart_from_the_terminal(nats: NatsServer) -> None:
    """Its own session (Ctrl-C in the terminal reaches the trace only), SIGINT ignored."""
    trace = start_trace(nats, unique_comm())
    pid = publisher_pid(trace.proc.pid)
    assert os.getsid(pid) != os.getsid(trace.proc.pid)
    ignored = int(re.search(r"SigIgn:\s+(\w+)", Path(f"/proc/{pid}/status").read_text())[1], 16)
    assert ignored & (1 << (signal.SIGINT - 1))
    finish(trace)
    assert gone(pid)


def test_publisher_killed_mid_run_is_one_line_and_exact_counts(
    nats: NatsServer, tmp_path: Path
) -> None:
    comm, target = unique_comm(), hot_file(tmp_path)
    trace = start_trace(nats, comm)
    pid = publisher_pid(trace.proc.pid)
    work(comm, target, 20000)
    w = Worker(comm, "open", target, 200000)
    w.go()
    time.sleep(0.3)  # mid-run: the worker is opening
    os.kill(pid, signal.SIGKILL)
    w.wait()
    work(comm, target, 5000)  # after the death: traced, counted as dropped
    wait_exported(trace, 225000)
    assert trace.proc.poll() is None  # the trace goes on
    summary, out, err = finish(trace)
    said = [m for m in (DIED.search(n) for n in [*notes(out), *err.splitlines()]) if m]
    assert len(said) == 1, (notes(out), err)
    x = summary["export"]
    died = x["export_dropped_by_reason"]["publisher_died"]
    assert died >= 5000 + int(said[0][1]), x  # what was not confirmed, and all after
    assert died > 0 and x["exported"] >= 20000 - x["export_dropped"], x
    check_invariant(summary, 225000, read_stream(nats), "h1")
    assert gone(pid)


@pytest.mark.parametrize("how", ["duration", "int", "term", "kill"])
def test_no_publisher_left_after_the_trace_ends(nats: NatsServer, how: str) -> None:
    extra = ("--duration", "2") if how == "duration" else ()
    trace = start_trace(nats, unique_comm(), *extra)
    pid = publisher_pid(trace.proc.pid)
    if how != "duration":
        trace.signal({"int": signal.SIGINT, "term": signal.SIGTERM, "kill": signal.SIGKILL}[how])
    trace.proc.wait(timeout=60)
    trace.join()
    if how != "kill":
        assert trace.proc.returncode == 0, trace.err
        assert "Traceback" not in trace.err
        summary = json.loads(trace.lines[-1])
        assert summary["export"]["export_dropped"] == 0, summary
    assert gone(pid), f"publisher {pid} outlived the trace ({how})"
