"""The libc handle and raw ``syscall(2)`` for calls Python does not wrap."""

from __future__ import annotations

import ctypes
import os
import platform
from functools import cache

# x86-64 and arm64 syscall numbers (asm/unistd_64.h, asm-generic/unistd.h).
_SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {"bpf": 321, "perf_event_open": 298, "memfd_create": 319, "futex": 202},
    "aarch64": {"bpf": 280, "perf_event_open": 241, "memfd_create": 279, "futex": 98},
}


@cache
def libc() -> ctypes.CDLL:
    """The process's libc, with errno captured per call: glibc's ``libc.so.6`` by its
    soname, else the one ``ctypes.util.find_library`` names (which runs ``ldconfig
    -p``, a process of its own: ~10 ms of every start, so not where glibc is)."""
    try:
        lib = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        from ctypes.util import find_library  # here: it imports subprocess (start-up ms)

        lib = ctypes.CDLL(find_library("c") or "libc.so", use_errno=True)
    lib.syscall.restype = ctypes.c_long
    lib.mmap.restype = ctypes.c_void_p
    lib.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    lib.munmap.restype = ctypes.c_int
    lib.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return lib


def syscall_number(name: str) -> int:
    """The number of syscall ``name`` on this machine's architecture."""
    arch = platform.machine()
    try:
        return _SYSCALLS[arch][name]
    except KeyError:
        raise OSError(f"ringtool does not know syscall {name!r} on {arch}") from None


def raw_syscall(name: str, *args: object) -> tuple[int, int]:
    """Call syscall ``name``; return ``(result, errno)`` (errno 0 on success)."""
    ctypes.set_errno(0)
    res = int(libc().syscall(ctypes.c_long(syscall_number(name)), *args))
    err = ctypes.get_errno() if res < 0 else 0
    return res, err


def copy_from_address(address: int, size: int) -> bytes:
    """``size`` bytes at a raw C address as bytes (for callbacks that get pointers,
    such as BCC's ring/perf buffer callbacks)."""
    return ctypes.string_at(address, size)


def strerror(err: int) -> str:
    return os.strerror(err)
