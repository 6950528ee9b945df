"""The in-kernel -t/-u/--cgroup/-x filters keep the accounting exact.

As for -p/-c (tests/kernel/trace/test_filters.py): with a 4 KiB ring per CPU and a
consumer that reads nothing while the workers run, ``events + dropped + lost`` must
equal the matching events generated, exactly, while a competing load of
non-matching events runs at the same time: a rejected event reserves nothing, and
(-x) a successful open is never counted as a drop.

The workers are real processes: each names itself, optionally moves to a uid, reports
ready (with its thread ids), waits for "go" on stdin, then does exactly its opens and
leaves with _exit.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ringtool.trace.reading.filters import resolve_cgroup
from ringtool.trace.reading.session import TraceOptions
from tests.helpers.cgroups import fresh_cgroup
from tests.helpers.trace import Trace, Worker, counts, traced, unique_comm

pytestmark = pytest.mark.kernel

#: argv: name, uid (-1: keep), threads, opens per thread, fail ("1": every other open
#: is of a missing path). Prints "ready TID..." once every thread waits for go.
_CHILD = r"""
import ctypes, os, sys, threading
name, uid, nthreads, n, fail = sys.argv[1:6]
nthreads, n = int(nthreads), int(n)
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(15, name.encode(), 0, 0, 0) == 0  # PR_SET_NAME
if int(uid) >= 0:
    os.setgid(int(uid)); os.setuid(int(uid))
go = threading.Event()
tids = []
def work():
    tids.append(threading.get_native_id())
    go.wait()
    for i in range(n):
        if fail == "1" and i % 2:
            try:
                os.open("/nonexistent-rtc/x", os.O_RDONLY)
            except FileNotFoundError:
                pass
        else:
            os.close(os.open("/dev/null", os.O_RDONLY))
threads = [threading.Thread(target=work) for _ in range(nthreads)]
for t in threads: t.start()
while len(tids) < nthreads: pass
sys.stdout.write("ready " + " ".join(map(str, tids)) + "\n"); sys.stdout.flush()
sys.stdin.readline()
go.set()
for t in threads: t.join()
os._exit(0)
"""


class Opener(Worker):
    """A process of ``threads`` threads doing ``n`` opens each of /dev/null (every
    other one of a missing path with ``fail``), as ``uid`` when given."""

    def __init__(self, n: int, *, uid: int = -1, threads: int = 1, fail: bool = False) -> None:
        self.name = unique_comm()
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, self.name, str(uid), str(threads), str(n),
             "1" if fail else "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        assert line and line[0] == "ready", line
        self.tids = [int(t) for t in line[1:]]


def run_all(workers: list[Opener]) -> None:
    for w in workers:
        w.go()
    for w in workers:
        w.wait()


def check_exact(opts: TraceOptions, match: list[Opener], other: list[Opener],
                expected: int) -> np.ndarray:  # fmt: skip
    """Run the workers under ``opts`` (open only, tiny rings, nothing read while they
    run); assert the accounting and that every record is a matching worker's."""
    with traced(opts) as s:
        run_all(other + match)
        records, dropped, lost = counts(s)
    comms = {bytes(c).decode() for c in records["h"]["comm"]}
    assert comms <= {w.name for w in match}, comms
    assert dropped > 0  # the tiny rings did overflow: tested under load
    assert len(records) + dropped + lost == expected
    return records


N, M = 1500, 6000


def test_tid_filter_is_exact_under_load() -> None:
    match = Opener(N, threads=2)  # the other thread of the same process competes
    other = Opener(M)
    tid = match.tids[0]
    opts = TraceOptions(events=("open",), buffer_pages=1, tid=tid)
    records = check_exact(opts, [match], [other], N)
    assert set(records["h"]["tid"].tolist()) == {tid}


def test_uid_filter_is_exact_under_load() -> None:
    match = Opener(N, uid=65534)
    other = Opener(M)  # root
    opts = TraceOptions(events=("open",), buffer_pages=1, uid=65534)
    records = check_exact(opts, [match], [other], N)
    assert set(records["uid"].tolist()) == {65534} and set(records["gid"].tolist()) == {65534}


def test_failed_only_is_exact_and_never_counts_a_successful_open() -> None:
    match = Opener(2 * N, fail=True)  # N failed opens between N successful ones
    other = Opener(M, fail=True)  # same mix, filtered out by comm
    opts = TraceOptions(events=("open",), buffer_pages=1, comm=match.name, failed_only=True)
    records = check_exact(opts, [match], [other], N)
    assert records["ret"].tolist() == [-2] * len(records)  # -ENOENT
    assert {bytes(p).decode() for p in records["data"]} == {"/nonexistent-rtc/x"}


@pytest.fixture
def cgroup() -> Iterator[Path]:
    """A fresh cgroup v2 directory (with a child ``sub``), removed afterwards."""
    with fresh_cgroup() as path:
        yield path


def test_cgroup_filter_is_exact_under_load_and_takes_the_subtree(cgroup: Path) -> None:
    inner = Opener(N)
    nested = Opener(N)
    other = Opener(M)  # same comm prefix, outside the cgroup
    (cgroup / "cgroup.procs").write_text(str(inner.pid))
    (cgroup / "sub" / "cgroup.procs").write_text(str(nested.pid))
    filt = resolve_cgroup(str(cgroup))
    assert filt.id == os.stat(cgroup).st_ino and filt.level >= 1
    opts = TraceOptions(events=("open",), buffer_pages=1, cgroup=filt)
    records = check_exact(opts, [inner, nested], [other], 2 * N)
    ids = set(records["h"]["cgroup"].tolist())
    assert ids <= {filt.id, os.stat(cgroup / "sub").st_ino}, ids


def test_every_record_carries_the_tasks_cgroup(cgroup: Path) -> None:
    worker = Opener(10, uid=65534)
    (cgroup / "cgroup.procs").write_text(str(worker.pid))
    opts = TraceOptions(events=("open",), comm=worker.name)
    with traced(opts) as s:
        run_all([worker])
        records, dropped, lost = counts(s)
    assert len(records) == 10 and dropped == 0 and lost == 0
    assert set(records["h"]["cgroup"].tolist()) == {os.stat(cgroup).st_ino}


def test_cli_name_regex_filters_after_the_ring() -> None:
    """-n REGEX keeps exactly the matching processes' events (all of them when nothing
    is dropped); the in-kernel -u keeps other processes out of the ring here."""
    match = Opener(300, uid=65534)
    other = Opener(300, uid=65534)
    pattern = "^" + re.escape(match.name[:9]) + "[0-9a-f]{6}$"
    assert re.search(pattern, other.name) is None
    proc = Trace("--json", "--events", "open", "-u", "65534", "-n", pattern)
    run_all([match, other])
    time.sleep(0.5)
    proc.signal(signal.SIGINT)
    out, _ = proc.finish()
    objs = [json.loads(line) for line in out if line.strip()]
    opens = [o for o in objs if o["type"] == "open"]
    summary = objs[-1]
    assert summary["dropped"] == 0 and summary["lost"] == 0
    assert {o["comm"] for o in opens} == {match.name}
    assert len(opens) == summary["events"] == 300
