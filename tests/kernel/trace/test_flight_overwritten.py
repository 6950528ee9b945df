"""A flight recorder accounts for every event its programs emitted: each is written by
a dump, dropped, lost or overwritten (``overwritten`` in the summary; where the kernel
cannot say exactly, ``overwritten_min``, a lower bound). A worker process does a known
number of opens, far more than SIZE holds, with ``-c`` so no other process counts."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.helpers.trace import Trace, Worker, hot_file, told_json, unique_comm

pytestmark = pytest.mark.kernel
START = 240  # BCC compiles the source before the start line (slow under TCG)
FIRST, SECOND = 3000, 2000  # opens before the SIGUSR1 dump, then before the end


def _opens(trace: Trace, path: Path) -> list[dict[str, object]]:
    evs = [json.loads(line) for line in list(trace.lines)]
    return [e for e in evs if e.get("type") == "open" and e.get("path") == str(path)]


def test_written_dropped_lost_and_overwritten_add_up_to_what_was_emitted(
    tmp_path: Path,
) -> None:
    comm, target = unique_comm(), hot_file(tmp_path)
    trace = Trace("--json", "--stats", "--events", "open", "-c", comm, "--flight-recorder", "4K",
                  "--interval", "0.2", start_timeout=START)  # fmt: skip
    try:
        first = Worker(comm, "open", target, FIRST)
        first.go()
        first.wait()
        trace.signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while not any(m.get("overwritten_min") for m in told_json(trace.err)):
            assert trace.proc.poll() is None, trace.err
            assert time.monotonic() < deadline, f"no stats line counts overwritten: {trace.err}"
            time.sleep(0.05)
        # a stats line between dumps: a lower bound (the kernel goes on overwriting)
        stats = [m for m in told_json(trace.err) if m.get("overwritten_min")][-1]
        dumped = len(_opens(trace, target))
        assert 0 < dumped < FIRST
        assert 0 < stats["overwritten_min"] <= FIRST - dumped
        second = Worker(comm, "open", target, SECOND)
        second.go()
        second.wait()
    finally:
        trace.signal(signal.SIGINT)
    lines, err = trace.finish()
    summary = json.loads(lines[-1])
    assert summary["type"] == "summary", lines[-1]
    written = len([json.loads(line) for line in lines if f'"comm": "{comm}"' in line])
    assert written == summary["events"] == summary["by_type"]["open"], summary
    emitted = FIRST + SECOND
    counted = written + summary["dropped"] + summary["lost"]
    if "overwritten" in summary:  # exact: the sources were detached before the last dump
        assert counted + summary["overwritten"] == emitted, summary
        assert summary["overwritten"] > 0
    else:  # the overwrite RINGBUF reader could not count every record (Linux 6.19+)
        assert summary["overwritten_min"] > 0 and counted + summary["overwritten_min"] <= emitted
    assert "flight recorder" in err
