"""An exec by a process that was running before the trace started names its parent
(the parents of running processes are seeded from /proc: ringtool/trace/reading/parents.py)."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

from ringtool.kernel import bpf
from ringtool.programs.table_view import MapTable
from ringtool.trace.reading.parents import parents_to_seed, seed_parents
from tests.helpers.trace import GoChild, Trace

pytestmark = pytest.mark.kernel

_CHILD = r"""
import os, sys
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
try:
    os.execv("/nonexistent/rt-ppid", ["rt-ppid"])
except OSError:
    pass
os.execv("/bin/true", ["true"])
"""


class Execer(GoChild):
    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"


def test_exec_of_a_process_forked_before_the_trace_has_its_ppid() -> None:
    child = Execer()  # forked before the trace: no fork record for it
    trace = Trace("--json", "--events", "exec", "-p", str(child.pid))
    child.go()
    child.wait()
    trace.signal(2)
    lines, _ = trace.finish()
    execs = [e for e in map(json.loads, lines) if e.get("type") == "exec"]
    failed = [e for e in execs if e["filename"] == "/nonexistent/rt-ppid"]
    ok = [e for e in execs if e["filename"] == "/bin/true"]
    assert failed and failed[0]["ret"] == -2 and failed[0]["ppid"] == os.getpid(), execs
    assert ok and ok[0]["ret"] == 0 and ok[0]["ppid"] == os.getpid(), execs


@pytest.mark.parametrize("map_type", [bpf.MapType.LRU_HASH, bpf.MapType.HASH])
def test_seeding_writes_every_running_process_in_one_batch(map_type: bpf.MapType) -> None:
    fd = bpf.map_create(map_type, key_size=4, value_size=4, max_entries=65536)
    try:
        table = MapTable(fd, map_type, 4, 4, 65536)
        before = dict(parents_to_seed())
        n = seed_parents(table)
        keys, values = bpf.map_lookup_batch_raw(fd, 4, 4)
        got = dict(zip(struct.unpack(f"<{len(keys) // 4}I", keys),
                       struct.unpack(f"<{len(values) // 4}I", values), strict=True))  # fmt: skip
        assert n == len(got) and got[os.getpid()] == os.getppid()
        # the processes running throughout (others came or went meanwhile)
        assert {p: before[p] for p in before.keys() & got.keys()} == {
            p: got[p] for p in before.keys() & got.keys()
        }
        assert len(before.keys() & got.keys()) >= len(before) - 50
    finally:
        bpf.close_fd(fd)


def test_a_batch_update_writes_every_pair_and_refuses_a_bad_shape() -> None:
    fd = bpf.map_create(bpf.MapType.HASH, key_size=4, value_size=8, max_entries=100)
    try:
        pairs = {k: k * 1000 + 7 for k in range(1, 61)}
        keys = b"".join(struct.pack("<I", k) for k in pairs)
        bpf.map_update_batch(fd, keys, b"".join(struct.pack("<Q", v) for v in pairs.values()), 60)
        for k, v in pairs.items():
            assert bpf.map_lookup(fd, struct.pack("<I", k), 8) == struct.pack("<Q", v)
        with pytest.raises(ValueError, match="for 7 elements"):
            bpf.map_update_batch(fd, bytes(4 * 6), bytes(8 * 7), 7)
    finally:
        bpf.close_fd(fd)
