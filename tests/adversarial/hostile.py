"""``python -m tests.adversarial.hostile SOCK DIR SECONDS``: the hostile consumer.

1. Attaches with the raw protocol and tries, on every descriptor it got, everything that
   would let it change what others read or stall the bridge: a writable shared mapping
   of the data, mprotect(PROT_WRITE) of a read-only one, write(), ftruncate(),
   fallocate() (grow and punch-hole), F_ADD_SEALS, and re-opening the data descriptor
   read-write through /proc/self/fd. Every attempt that works is listed in ``breaches``.
2. If it got a writable view of the data anyway (protocol v1), forges events in it
   (comm ``advforged``, one seq of 2**64-1): what an honest reader or the bridge then
   does shows the harm.
3. Scribbles every byte of every metadata page for SECONDS: extreme values in each
   field (positions, magic, capacity, generation, need_wake, futex word), then random
   bytes; leaves a hostile final state.
4. Attaches with the public API, starts a futex wait, writes ``DIR/hostile.json`` and
   SIGKILLs itself in the middle of that read.
"""

from __future__ import annotations

import ctypes
import fcntl
import json
import os
import random
import signal
import struct
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from ringtool.kernel.libc import libc
from tests.helpers import rawproto as P

_libc = libc()  # mmap/munmap prototypes from ringtool; the attacker's extra calls below
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
_libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
PROT_READ, PROT_WRITE, MAP_SHARED = 1, 2, 1
FALLOC_FL_KEEP_SIZE, FALLOC_FL_PUNCH_HOLE = 1, 2
MAP_FAILED = ctypes.c_void_p(-1).value
U64 = (1 << 64) - 1


def mmap(fd: int, length: int, prot: int, offset: int = 0) -> int | None:
    addr = _libc.mmap(None, length, prot, MAP_SHARED, fd, offset)
    return None if addr in (None, MAP_FAILED) else int(addr)


def fallocate(fd: int, mode: int, off: int, length: int) -> None:
    if _libc.fallocate(fd, mode, off, length) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


class Probe:
    def __init__(self) -> None:
        self.breaches: list[str] = []
        self.tried = 0

    def attempt(self, what: str, fn: Any) -> Any:
        """Run a hostile action; an action that does not raise OSError is a breach."""
        self.tried += 1
        try:
            res = fn()
        except OSError:
            return None
        self.breaches.append(what)
        return res if res is not None else True


def probe_data(p: Probe, cpu: int, fd: int, off: int, cap: int) -> list[int]:
    """Try to gain write access to the data of ``cpu``; returns writable addresses."""
    writable: list[int] = []
    if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY:
        p.breaches.append(f"cpu {cpu}: data fd is not O_RDONLY")

    def map_rw(f: int = fd) -> int:
        addr = mmap(f, cap, PROT_READ | PROT_WRITE, off)
        if addr is None:
            raise OSError(ctypes.get_errno(), "mmap")
        return addr

    if (a := p.attempt(f"cpu {cpu}: mmap(PROT_WRITE, MAP_SHARED) of data", map_rw)) is not None:
        writable.append(a)
    ro = mmap(fd, cap, PROT_READ, off)
    if ro is not None:

        def mprotect() -> None:
            if _libc.mprotect(ro, cap, PROT_READ | PROT_WRITE) != 0:
                raise OSError(ctypes.get_errno(), "mprotect")

        if p.attempt(f"cpu {cpu}: mprotect(PROT_WRITE) of a data mapping", mprotect):
            writable.append(ro)
    same = os.pread(fd, 8, off)  # write back what is there: the capability is the point
    p.attempt(f"cpu {cpu}: pwrite() to data", lambda: os.pwrite(fd, same, off))
    p.attempt(f"cpu {cpu}: ftruncate(data, 0)", lambda: os.ftruncate(fd, 0))
    p.attempt(f"cpu {cpu}: ftruncate(data, 4*cap)", lambda: os.ftruncate(fd, off + 4 * cap))
    p.attempt(f"cpu {cpu}: fallocate(data) grow", lambda: fallocate(fd, 0, 0, off + 4 * cap))
    p.attempt(
        f"cpu {cpu}: fallocate(data) punch hole",
        lambda: fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, off, 4096),
    )
    try_seals(p, cpu, fd, "data")
    reopened = p.attempt(
        f"cpu {cpu}: reopen data O_RDWR via /proc/self/fd",
        lambda: os.open(f"/proc/self/fd/{fd}", os.O_RDWR | os.O_CLOEXEC),
    )
    if isinstance(reopened, int) and reopened is not True:
        p.breaches.pop()  # re-opening alone changes nothing; writing through it does
        p.attempt(
            f"cpu {cpu}: pwrite() to data via /proc reopen", lambda: os.pwrite(reopened, same, off)
        )
        if (
            a := p.attempt(
                f"cpu {cpu}: mmap(PROT_WRITE) via /proc reopen", lambda: map_rw(reopened)
            )
        ) is not None:
            writable.append(a)
        os.close(reopened)
    return writable


def try_seals(p: Probe, cpu: int, fd: int, what: str) -> None:
    """Try to add each seal that would stop the bridge writing (or resizing) ``fd``."""
    for name, seal in (
        ("WRITE", P.F_SEAL_WRITE),
        ("FUTURE_WRITE", P.F_SEAL_FUTURE_WRITE),
        ("SEAL", P.F_SEAL_SEAL),
    ):
        p.attempt(
            f"cpu {cpu}: F_ADD_SEALS({name}) on {what}",
            lambda s=seal: fcntl.fcntl(fd, fcntl.F_ADD_SEALS, s),
        )


def probe_meta(p: Probe, cpu: int, fd: int) -> None:
    size = os.fstat(fd).st_size
    if size != P.PAGE:
        p.breaches.append(f"cpu {cpu}: meta fd is {size} bytes, not 4096")
    p.attempt(f"cpu {cpu}: ftruncate(meta, 0)", lambda: os.ftruncate(fd, 0))
    p.attempt(f"cpu {cpu}: ftruncate(meta, 8192)", lambda: os.ftruncate(fd, 2 * P.PAGE))
    p.attempt(f"cpu {cpu}: fallocate(meta) grow", lambda: fallocate(fd, 0, 0, 2 * P.PAGE))
    try_seals(p, cpu, fd, "meta")


def forge(meta: memoryview, data: memoryview, cap: int) -> int:
    """Turn every exec event in a writable data view into one of ``advforged``, and give
    the newest event seq 2**64-1 (what a resize must not take from shared memory)."""
    wp = struct.unpack_from("<Q", meta, P.OFF_WRITE_POS)[0]
    pos = struct.unpack_from("<Q", meta, P.OFF_TAIL_POS)[0]
    n, last = 0, -1
    while pos < wp:
        off = pos & (cap - 1)
        size, etype = struct.unpack_from("<IH", data, off)
        if size < 32 or size & 7 or off + size > cap:
            break
        if etype == 1:
            data[off + 32 + 16 : off + 32 + 32] = b"advforged".ljust(16, b"\0")
            n += 1
        last, pos = off, pos + size
    if last >= 0:
        struct.pack_into("<Q", data, last + 16, U64)
    return n


def view(addr: int, length: int) -> memoryview:
    return memoryview((ctypes.c_char * length).from_address(addr)).cast("B")


def scribble(metas: list[memoryview], fds: list[int], seconds: float) -> int:
    rnd = random.Random(os.getpid())
    q = "<Q"
    extremes: list[tuple[int, str, int]] = [
        (0, "<Q", 0),
        (8, "<I", 99),
        (12, "<H", 0xFFFF),
        (14, "<H", 0xFFFF),
        (16, q, 0),
        (16, q, 3),
        (16, q, 1 << 63),
        (24, q, 0),
        (24, q, U64),
        (32, q, 0),
        (32, q, U64),
        (32, q, 7),
        (64, q, 0),
        (64, q, U64),
        (64, q, 3),
        (72, q, U64),
        (72, q, 1 << 40),
        (72, q, 5),
        (128, "<I", 0xFFFFFFFF),
        (132, "<B", 1),
        (132, "<B", 0xFF),
        (80, q, U64),
    ]
    end = time.monotonic() + seconds / 2
    n = 0
    while time.monotonic() < end:  # targeted: one field at a time, relative values too
        for off, fmt, val in extremes:
            for m in metas:
                wp = struct.unpack_from(q, m, P.OFF_WRITE_POS)[0]
                struct.pack_into(fmt, m, off, val)
                struct.pack_into(
                    q, m, rnd.choice((64, 72)), (wp + rnd.choice((8, 64, 4096, 1 << 20))) & U64
                )
                n += 1
            time.sleep(0.001)
    end = time.monotonic() + seconds / 2
    while time.monotonic() < end:  # everything at once
        for m, fd in zip(metas, fds, strict=True):
            m[:] = rnd.randbytes(P.PAGE)
            os.pwrite(fd, rnd.randbytes(64), rnd.randrange(0, P.PAGE - 64))
            n += 1
        time.sleep(0.001)
    for m in metas:  # leave it hostile: zero magic, absurd positions, need_wake set
        m[0:64] = bytes(64)
        struct.pack_into("<QQ", m, 64, U64, U64)
        struct.pack_into("<IB", m, 128, 0xFFFFFFFF, 1)
    return n


def run(sock: str, seconds: float, rep: dict[str, Any]) -> None:
    r = P.raw_attach(sock)
    rep.update(
        version=r.reply.get("version"),
        fds_per_cpu=r.reply.get("fds_per_cpu"),
        nfds=len(r.fds),
        ncpus=len(r.reply["cpus"]),
        messages=r.messages,
    )
    cap = int(r.reply["capacity"])
    p = Probe()
    metas, meta_fds, writable = [], [], []
    for cpu, (meta, data) in zip(r.reply["cpus"], P.pairs(r), strict=True):
        off = P.PAGE if meta == data else 0  # v1: one fd, data after the metadata page
        w = probe_data(p, cpu, data, off, cap)
        if meta != data:
            probe_meta(p, cpu, meta)
        addr = mmap(meta, P.PAGE, PROT_READ | PROT_WRITE)
        if addr is None:
            p.breaches.append(f"cpu {cpu}: cannot even map the metadata page read-write")
            continue
        metas.append(view(addr, P.PAGE))
        meta_fds.append(meta)
        if w:
            writable.append((metas[-1], view(w[0], cap), cap))
    rep["breaches"], rep["tried"] = p.breaches, p.tried
    rep["forged"] = sum(forge(m, dv, c) for m, dv, c in writable)
    rep["scribbles"] = scribble(metas, meta_fds, seconds)


def suicide_mid_read(sock: str, d: Path, rep: dict[str, Any]) -> None:
    """Attach with the public API, sleep in futex_waitv with need_wake set, and die."""
    try:
        from ringtool.kmes.attach import attach
        from ringtool.kmes.reader import wait_any

        readers = attach(sock)
        for rd in readers:
            rd.drain(16)
        threading.Thread(target=wait_any, args=(readers, 30.0), daemon=True).start()
        time.sleep(0.05)
        rep["api_attach"] = "ok"
    except Exception as exc:
        rep["api_attach"] = f"{type(exc).__name__}: {exc}"
    (d / "hostile.json").write_text(json.dumps(rep))
    os.kill(os.getpid(), signal.SIGKILL)


def main(sock: str, dirpath: str, seconds: float) -> None:
    d = Path(dirpath)
    rep: dict[str, Any] = {"error": None}
    try:
        run(sock, seconds, rep)
    except BaseException:
        rep["error"] = traceback.format_exc()
    suicide_mid_read(sock, d, rep)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
