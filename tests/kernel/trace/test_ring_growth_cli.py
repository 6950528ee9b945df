"""``ringtool trace`` with growing rings: the note of a switch on stderr and the
rings' sizes and switches per CPU in the JSON summary (the real CLI as a process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.trace import Trace, Worker, told_json, unique_comm

pytestmark = pytest.mark.kernel


def test_json_summary_and_notes_tell_the_switches(tmp_path: Path) -> None:
    comm = unique_comm()
    trace = Trace("--json", "--events", "open", "-c", comm, "--buffer-pages", "8",
                  "--max-buffer-mb", "64", "-d", "4")  # fmt: skip
    worker = Worker(comm, "seq", tmp_path / "n", 20_000)
    worker.go()
    worker.wait()
    lines, err = trace.finish()
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
    trace = Trace("--json", "--events", "open", "-c", comm, "--buffer-pages", "8",
                  "--no-grow", "-d", "3")  # fmt: skip
    worker = Worker(comm, "seq", tmp_path / "n", 5000)
    worker.go()
    worker.wait()
    lines, err = trace.finish()
    rings = json.loads(lines[-1])["rings"]
    assert not rings["growth"] and rings["switches"] == 0 and rings["max_bytes"] is None
    assert all(r["bytes"] == 8 * 4096 for r in rings["per_cpu"])
    assert "ring grown" not in err


def test_ordered_output_keeps_order_and_count_across_switches(tmp_path: Path) -> None:
    """``--ordered``: the worker (one thread) opens path/0, path/1, ...; its events come
    out in that order across the switches of its rings, each once or counted dropped."""
    comm = unique_comm()
    trace = Trace("--json", "--ordered", "--events", "open", "-c", comm, "--buffer-pages",
                  "8", "-d", "4")  # fmt: skip
    worker = Worker(comm, "seq", tmp_path / "n", 20_000)
    worker.go()
    worker.wait()
    lines, _err = trace.finish()
    summary = json.loads(lines[-1])
    names = [json.loads(line)["path"] for line in lines[:-1]]
    seen = [int(n.rsplit("/", 1)[-1]) for n in names]
    assert len(seen) + summary["dropped"] == 20_000
    assert seen == sorted(set(seen)), "out of order or repeated"
    assert summary["rings"]["switches"] >= 1
