"""Child-process helpers for the KMES multi-process tests (run with ``python -m``).

``python -m tests.unit.kmes_proc read SOCK N TIMEOUT``: attach, read until N events in
total (sleeping in futex_waitv), print one JSON line: seqs per CPU, stats, CPU time.
``python -m tests.unit.kmes_proc until SOCK SEQ TIMEOUT``: read until every CPU has
reached seq SEQ; print seqs and stats.
``python -m tests.unit.kmes_proc idle SOCK SECONDS``: attach, wait idle, print CPU time.
``python -m tests.unit.kmes_proc scribble SOCK SECONDS``: attach and scribble random
bytes over every metadata page (writable mapping) for SECONDS.
``python -m tests.unit.kmes_proc bridge SOCK N``: serve a KMES bridge (CPU 0) on SOCK
with N events in it, print "serving", then sleep until killed.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

from ringtool.kernel.shm import DoubleMapping
from ringtool.kmes.attach import attach, attach_fds
from ringtool.kmes.reader import wait_any


def read(sock: str, n: int, timeout: float) -> None:
    readers = attach(sock)
    print("attached", flush=True)
    seqs: dict[int, list[int]] = {r.cpu: [] for r in readers}
    payload_ok = True
    deadline = time.monotonic() + timeout
    total = 0
    while total < n and time.monotonic() < deadline:
        for r in readers:
            for ev in r.drain():
                seqs[r.cpu].append(ev.seq)
                payload_ok &= ev.payload == ev.seq.to_bytes(8, "little")
                total += 1
        if total < n:
            wait_any(readers, timeout=0.5)
    stats = {r.cpu: [r.stats.lapped_events, r.stats.gap_events, r.generation] for r in readers}
    print(json.dumps({"seqs": seqs, "ok": payload_ok, "stats": stats}), flush=True)


def until(sock: str, last: int, timeout: float) -> None:
    """Read until every CPU's last seq reaches ``last``; print seqs and stats."""
    readers = attach(sock)
    print("attached", flush=True)
    seqs: dict[int, list[int]] = {r.cpu: [] for r in readers}
    payload_ok = True
    deadline = time.monotonic() + timeout
    while min(r.last_seq for r in readers) < last and time.monotonic() < deadline:
        for r in readers:
            for ev in r.drain():
                seqs[r.cpu].append(ev.seq)
                payload_ok &= ev.payload == ev.seq.to_bytes(8, "little")
        wait_any(readers, timeout=0.2)
    stats = {r.cpu: [r.stats.lapped_events, r.stats.inconsistent] for r in readers}
    print(json.dumps({"seqs": seqs, "ok": payload_ok, "stats": stats}), flush=True)


def idle(sock: str, seconds: float) -> None:
    readers = attach(sock)
    print("attached", flush=True)
    t0 = time.process_time()
    end = time.monotonic() + seconds
    woke = 0
    while time.monotonic() < end:
        woke += wait_any(readers, timeout=end - time.monotonic())
    print(json.dumps({"cpu": time.process_time() - t0, "woke": woke}), flush=True)


def scribble(sock: str, seconds: float) -> None:
    reply, fds = attach_fds(sock)
    cap = int(reply["capacity"])  # type: ignore[call-overload]
    maps = [
        DoubleMapping(fds[i], fds[i + 1], 4096, cap, writable_ring=False)
        for i in range(0, len(fds), 2)
    ]
    print("attached", flush=True)
    rnd = random.Random(1)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        for m in maps:
            m.head[:] = rnd.randbytes(4096)
            n += 1
    print(json.dumps({"scribbles": n}), flush=True)
    for m in maps:
        m.close()
    for fd in fds:
        os.close(fd)


def bridge(sock: str, n: int) -> None:
    from ringtool.bridge.core import KmesBridge

    b = KmesBridge([0], socket_path=sock, capacity=1 << 16)
    b.start()
    for seq in range(1, n + 1):
        b.submit(0, 1, 9, seq.to_bytes(8, "little"))
    b.flush()
    print("serving", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    cmd, sock, *rest = sys.argv[1:]
    if cmd == "bridge":
        bridge(sock, int(rest[0]))
    elif cmd == "read":
        read(sock, int(rest[0]), float(rest[1]))
    elif cmd == "until":
        until(sock, int(rest[0]), float(rest[1]))
    elif cmd == "idle":
        idle(sock, float(rest[0]))
    else:
        scribble(sock, float(rest[0]))
