"""``ringtool trace`` with growing rings: the note of a switch on stderr and the
rings' sizes and switches per CPU in the JSON summary (the real CLI as a process).

The worker is started (and waits) before the trace and the trace is stopped with
SIGINT once the worker is done: a fixed ``-d`` could end the trace before an emulated
guest's worker had made all its opens (those would be neither events nor drops). The
worker and the trace share one CPU: the trace then falls behind the worker, its ring
fills and grows (on a CPU of its own the reader may keep up with the worker, and no
ring ever needs to grow), and the ordered check is about switches, not about CPUs."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.helpers.trace import Trace, Worker, told_json, unique_comm

pytestmark = pytest.mark.kernel


def _pinned(comm: str, path: Path, n: int) -> Worker:
    worker = Worker(comm, "seq", path, n)
    os.sched_setaffinity(worker.pid, {min(os.sched_getaffinity(0))})
    return worker


def _run(trace: Trace, worker: Worker) -> tuple[list[str], str]:
    os.sched_setaffinity(trace.proc.pid, os.sched_getaffinity(worker.pid))  # one CPU
    worker.go()
    worker.wait()
    trace.signal(signal.SIGINT)  # the trace reads what is left, then the summary
    return trace.finish()


def test_json_summary_and_notes_tell_the_switches(tmp_path: Path) -> None:
    comm = unique_comm()
    worker = _pinned(comm, tmp_path / "n", 20_000)
    trace = Trace("--json", "--events", "open", "-c", comm, "--buffer-pages", "8",
                  "--max-buffer-mb", "64")  # fmt: skip
    lines, err = _run(trace, worker)
    summary = json.loads(lines[-1])
    assert summary["type"] == "summary"
    events = sum(1 for line in lines[:-1] if json.loads(line)["type"] == "open")
    assert events + summary["dropped"] == 20_000 == summary["events"] + summary["dropped"]
    rings = summary["rings"]
    assert rings["growth"] and rings["max_bytes"] == 64 << 20 and rings["switches"] >= 1
    grown = [r for r in rings["per_cpu"] if r["grown"]]
    assert grown and all(r["bytes"] > 8 * 4096 and r["peak_bytes"] >= r["bytes"] for r in grown)
    notes = [o["text"] for o in told_json(err) if o["type"] == "note"]
    assert any("ring grown 32 KiB -> " in n for n in notes), notes


def test_no_grow_keeps_the_rings(tmp_path: Path) -> None:
    comm = unique_comm()
    worker = _pinned(comm, tmp_path / "n", 5000)
    trace = Trace("--json", "--events", "open", "-c", comm, "--buffer-pages", "8",
                  "--no-grow")  # fmt: skip
    lines, err = _run(trace, worker)
    rings = json.loads(lines[-1])["rings"]
    assert not rings["growth"] and rings["switches"] == 0 and rings["max_bytes"] is None
    assert all(r["bytes"] == 8 * 4096 for r in rings["per_cpu"])
    assert "ring grown" not in err


def test_ordered_output_keeps_order_and_count_across_switches(tmp_path: Path) -> None:
    """``--ordered``: the worker (one thread) opens path/0, path/1, ...; its events come
    out in that order across the switches of its rings, each once or counted dropped."""
    comm = unique_comm()
    worker = _pinned(comm, tmp_path / "n", 20_000)
    trace = Trace("--json", "--ordered", "--events", "open", "-c", comm, "--buffer-pages",
                  "8")  # fmt: skip
    lines, _err = _run(trace, worker)
    summary = json.loads(lines[-1])
    names = [json.loads(line)["path"] for line in lines[:-1]]
    seen = [int(n.rsplit("/", 1)[-1]) for n in names]
    assert len(seen) + summary["dropped"] == 20_000
    assert seen == sorted(set(seen)), "out of order or repeated"
    assert summary["rings"]["switches"] >= 1
