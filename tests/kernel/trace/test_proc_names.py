"""Process names follow exec, with the real exec/open sources: children that start
as ``sh`` (their redirection's open is sh's) and exec ``cat`` are counted as ``cat``
in the table the dashboard, its ``/`` filter and its drill-down read, also when
their whole life is in one batch (on old main: the first record's name, ``sh``)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from ringtool.event.layout import load_layout
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.trace.reading.session import TraceOptions, TraceSession
from ringtool.trace.report.stats import TraceStats

pytestmark = pytest.mark.kernel
CHILDREN = 30
UID = 54321  # no one else's


def test_children_that_exec_cat_are_named_cat(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("x")
    tmp_path.chmod(0o755)
    layout = load_layout()
    # only the children's uid: other work on the machine cannot crowd them out
    opts = TraceOptions(events=("exec", "open"), buffer_pages=512, uid=UID)
    s = TraceSession(opts, layout)
    try:
        s.start()
        pids = []
        for _ in range(CHILDREN):  # sh opens /dev/null for `:`, then becomes cat
            child = subprocess.Popen(["/bin/sh", "-c", f": </dev/null; exec /bin/cat {target}"],
                                     stdout=subprocess.DEVNULL, user=UID)  # fmt: skip
            child.wait()
            pids.append(child.pid)
        parts = []
        while len(batch := s.read_events()):
            parts.append(batch)
    finally:
        s.close()
    records = np.concatenate(parts)
    stats = TraceStats(layout.type_names, possible_cpu_count(), ["exec", "open"])
    stats.add_batch(records)  # one batch: each child's whole life
    h = records["h"]
    for pid in pids:  # each child's records: first as sh, then as cat
        comms = {bytes(c).rstrip(b"\0") for c in h["comm"][h["pid"] == pid]}
        assert {b"sh", b"cat"} <= comms, (pid, comms)
    names = {pid: stats.procs[pid][0] for pid in pids}
    assert set(names.values()) == {"cat"}, names
    assert sum(name == "cat" for _, name, _, _ in stats.proc_rows()) >= CHILDREN  # `/cat`
