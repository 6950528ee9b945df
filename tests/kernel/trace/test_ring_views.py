"""The trace loop formats the records as views of the mapped rings (no copy) and gives
the space back only after the output and the sinks are done with them. A tiny ring
that a fast producer refills as soon as it can: every line written is one of the
opens made, each at most once, none torn (a record read after its space was reused
would show another open's path, or a mix), and the lines plus the counted drops are
exactly the opens made."""

from __future__ import annotations

import json
import re
import signal
from pathlib import Path

import pytest

from tests.helpers.trace import Trace, Worker, unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]  # the loop, not the kernel


@pytest.mark.parametrize("filtered", [False, True])
def test_every_line_is_one_open_made_once(tmp_path: Path, filtered: bool) -> None:
    n, comm = 20_000, unique_comm()
    base = tmp_path / "n"
    base.mkdir()
    flags = ["--json", "-n", comm[:8]] if filtered else ["--json"]  # -n: a copy per read
    tr = Trace(*flags, "-c", comm, "--events", "open", "--buffer-pages", "8", "--no-grow")
    worker = Worker(comm, "seq", base, n)
    worker.go()
    worker.wait()
    tr.signal(signal.SIGINT)
    out, _ = tr.finish()
    summary = json.loads(out[-1])
    events = [json.loads(line) for line in out[:-1]]
    pattern = re.compile(re.escape(str(base)) + r"/(\d+)")
    seen = [int(m.group(1)) for e in events if (m := pattern.fullmatch(e["path"]))]
    cpus = [e["cpu"] for e in events]
    torn = [e["path"] for e in events if not pattern.fullmatch(e["path"])]
    assert not torn, torn[:3]
    assert len(set(seen)) == len(seen) and all(0 <= i < n for i in seen)
    assert summary["events"] == len(events)
    assert summary["events"] + summary["dropped"] == n
    for cpu in set(cpus):  # each CPU's ring: the order the producer opened them in
        mine = [i for i, c in zip(seen, cpus, strict=True) if c == cpu]
        assert mine == sorted(mine), cpu
