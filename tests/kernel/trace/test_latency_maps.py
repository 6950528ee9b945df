"""The syscalls source's two latency maps (bpf/trace_syscalls.c): a syscall whose number
the array covers is counted there, one beyond it (an unknown number, ENOSYS) in the
hash, and ringtool's figures add both: each count is exactly the number of calls made.
And the array's reader (:class:`ringtool.trace.reading.hist_maps.LatencyArray`) on a real
mmapable array: what is written through the map is what the mapping shows; a hash read
with BPF_MAP_LOOKUP_BATCH (the drill-down's per-process histograms)."""

from __future__ import annotations

import json
import signal
import struct
import subprocess
import sys

import pytest

from ringtool.kernel import bpf
from ringtool.trace.reading.hist_maps import LatencyArray, add_items
from ringtool.trace.reading.latency_buckets import FAST_BUCKETS, FAST_NRS, KEY_BITS
from tests.helpers.paths import ROOT
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel

BPF_F_MMAPABLE = 1 << 10
#: the child: waits for a line, then N getppid() calls and M calls of an unknown
#: syscall number (beyond the array: the hash), then says done
_CHILD = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
n, m, unknown = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
sys.stdin.readline()
for _ in range(n):
    libc.syscall(110)  # getppid on x86-64
for _ in range(m):
    assert libc.syscall(unknown) == -1 and ctypes.get_errno() == 38  # ENOSYS
print("done", flush=True)
sys.stdin.readline()
"""


@pytest.mark.skipif(__import__("os").uname().machine != "x86_64", reason="x86-64 numbers")
def test_counts_in_the_array_and_the_hash_add_up_exactly() -> None:
    n, m, unknown = 700, 300, FAST_NRS + 100
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(n), str(m), str(unknown)],
                             cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)  # fmt: skip
    assert child.stdin is not None and child.stdout is not None
    try:
        trace = Trace("--events", "syscalls", "--hist", "--json", "-p", str(child.pid))
        child.stdin.write("go\n")
        child.stdin.flush()
        assert child.stdout.readline() == "done\n"
        trace.signal(signal.SIGINT)
        out, _ = trace.finish()
    finally:
        child.kill()
        child.wait()
    by_name = {o["syscall"]: o for o in map(json.loads, out) if o["type"] == "hist"}
    fast, slow = by_name["getppid"], by_name[f"sys_{unknown}"]  # a number no table names
    assert fast["count"] == n, fast
    assert slow["count"] == m, slow
    assert sum(c for _, _, c in fast["buckets"]) == n
    assert sum(c for _, _, c in slow["buckets"]) == m


def test_the_array_reader_shows_what_the_map_holds() -> None:
    fd = bpf.map_create(bpf.MapType.ARRAY, key_size=4, value_size=8,
                        max_entries=FAST_NRS * FAST_BUCKETS, flags=BPF_F_MMAPABLE)  # fmt: skip
    try:
        lat = LatencyArray(fd)
        assert lat.read() == {}
        want = {0: {0: 1}, 3: {17: 5, FAST_BUCKETS - 1: 2}, FAST_NRS - 1: {600: 1 << 40}}
        for nr, buckets in want.items():
            for bucket, count in buckets.items():
                key = struct.pack("<I", nr * FAST_BUCKETS + bucket)
                bpf.map_update(fd, key, struct.pack("<Q", count))
        assert lat.read() == want  # through the mapping, no lookup
        lat.close()
        lat.close()  # idempotent
    finally:
        bpf.close_fd(fd)


def test_batch_lookup_reads_every_key_of_a_hash() -> None:
    # more keys than one kernel batch step; a hash's order is its own: compared as dicts
    fd = bpf.map_create(bpf.MapType.HASH, key_size=8, value_size=8, max_entries=5000)
    try:
        assert bpf.map_lookup_batch_u64(fd, 5000) == (b"", b"")
        want = {(pid << 32) | (257 << KEY_BITS) | b: pid * 10 + b
                for pid in (7, 8, 1 << 20) for b in range(1500)}  # fmt: skip
        for k, v in want.items():
            bpf.map_update(fd, struct.pack("<Q", k), struct.pack("<Q", v))
        keys, values = bpf.map_lookup_batch_u64(fd, 5000)
        got = dict(zip(struct.unpack(f"<{len(keys) // 8}Q", keys),
                       struct.unpack(f"<{len(values) // 8}Q", values), strict=True))  # fmt: skip
        assert got == want
        # the drill-down's sums: those processes' buckets only
        hist = add_items(got.items(), {8, 1 << 20})
        assert hist == {257: {b: 80 + b + (1 << 20) * 10 + b for b in range(1500)}}
    finally:
        bpf.close_fd(fd)
