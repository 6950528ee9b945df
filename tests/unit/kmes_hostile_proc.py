"""A hostile KMES consumer process: ``python -m tests.unit.kmes_hostile_proc SOCK SECONDS``.

Attaches by hand (protocol v2), tries every way of writing the data region (a writable
``MAP_SHARED`` mapping of the data fd, a ``/proc/self/fd`` re-open ``O_RDWR`` then
``pwrite`` and ``mmap``, ``ftruncate``, adding seals) and reports which worked, then
prints ``scribbling`` and, for SECONDS, overwrites every metadata field it can reach
with hostile values (magic, version, capacity, data_offset, generation, write_pos and
tail_pos = 2**64-1 and other huge or misaligned values, futex_counter, need_wake,
reserved bytes), finally one JSON line ``{"breaches": [...], "scribbles": N}``.
"""

from __future__ import annotations

import fcntl
import json
import mmap
import os
import random
import struct
import sys
import time

from tests.helpers.rawproto import raw_attach

HUGE = [2**64 - 1, 2**63, 2**64 - 8, 1 << 40, 3, 0]
REATTACH = 0.3  # seconds between re-attaches (to scribble the current buffers)


def _try(breaches: list[str], what: str, fn: object) -> None:
    try:
        fn()  # type: ignore[operator]
    except OSError:
        return
    breaches.append(what)


def _attempts(meta_fd: int, data_fd: int, cap: int) -> list[str]:
    """Every way of writing the data region (and re-sealing/resizing) that worked."""
    rw = mmap.PROT_READ | mmap.PROT_WRITE
    breaches: list[str] = []
    _try(breaches, "mmap rw data", lambda: mmap.mmap(data_fd, cap, mmap.MAP_SHARED, rw))
    _try(breaches, "pwrite data", lambda: os.pwrite(data_fd, b"x" * 32, 0))
    _try(breaches, "ftruncate data", lambda: os.ftruncate(data_fd, 0))
    _try(breaches, "ftruncate meta", lambda: os.ftruncate(meta_fd, 1 << 20))
    _try(breaches, "seal meta", lambda: fcntl.fcntl(meta_fd, fcntl.F_ADD_SEALS, 0x10))
    again = os.open(f"/proc/self/fd/{data_fd}", os.O_RDWR)  # works (docs/kmes.md §2.3)...
    _try(breaches, "reopen pwrite", lambda: os.pwrite(again, b"\xff" * 32, 16))
    _try(breaches, "reopen mmap rw", lambda: mmap.mmap(again, cap, mmap.MAP_SHARED, rw))
    _try(breaches, "reopen seal write", lambda: fcntl.fcntl(again, fcntl.F_ADD_SEALS, 8))
    os.close(again)
    return breaches


def _attach(sock: str, breaches: list[str]) -> tuple[list[int], list[mmap.mmap]]:
    """Attach; map every metadata page writable; try every data write."""
    reply, fds, _ = raw_attach(sock, timeout=10.0, strict=True)
    cap = int(reply["capacity"])
    metas: list[mmap.mmap] = []
    for meta_fd, data_fd in zip(fds[0::2], fds[1::2], strict=True):
        metas.append(mmap.mmap(meta_fd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
        breaches += _attempts(meta_fd, data_fd, cap)
    return fds, metas


def _detach(fds: list[int], metas: list[mmap.mmap]) -> None:
    for m in metas:
        m.close()
    for fd in fds:
        os.close(fd)


def main(sock: str, seconds: float) -> None:
    breaches: list[str] = []
    fds, metas = _attach(sock, breaches)
    print("scribbling", flush=True)
    rnd = random.Random(7)
    end = time.monotonic() + seconds
    next_attach = time.monotonic() + REATTACH
    n = 0
    while time.monotonic() < end:
        if time.monotonic() >= next_attach:  # follow the bridge's resizes
            _detach(fds, metas)
            fds, metas = _attach(sock, breaches)
            next_attach = time.monotonic() + REATTACH
        for m in metas:
            v = rnd.choice(HUGE)
            m[0:8] = b"EVILRING"
            struct.pack_into("<IHHQQQ", m, 8, 99, 0xFFFF, 0xFFFF, v, v, v)
            struct.pack_into("<QQ", m, 64, v, rnd.choice(HUGE))  # write_pos, tail_pos
            struct.pack_into("<IB", m, 128, rnd.getrandbits(32), 1)  # futex, need_wake
            m[200:4096] = rnd.randbytes(3896)
            n += 1
    print(json.dumps({"breaches": sorted(set(breaches)), "scribbles": n}), flush=True)
    _detach(fds, metas)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]))
