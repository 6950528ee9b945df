"""libbpf (Debian's ``libbpf1``: ``libbpf.so.1``) in this process, for clang's objects
of the ``bpf/*.bpf.c`` programs: what ``bpftool prog load`` does, without starting
bpftool (a fork and exec, libbpf's feature probes in a process of its own, the object
written to a temporary file) on every trace's start.

:func:`load_program` opens an object from memory (``bpf_object__open_mem``), gives
each named map an existing fd (``bpf_map__reuse_fd``: libbpf checks that type, sizes
and flags match the declaration), loads it (``bpf_object__load``: libbpf's
relocations, the kernel's verifier) and returns a descriptor of its one program; the
object is closed again (its maps are the caller's). libbpf's messages are off: where
libbpf is missing or anything fails, the caller loads with bpftool, which says why
(:mod:`ringtool.programs.clang_loader`).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from functools import cache

from ringtool.errors import RingtoolError

SONAME = "libbpf.so.1"


class LibbpfUnusable(RingtoolError):
    """libbpf is not installed, or refused the object (its errno in the message)."""


@cache
def _lib() -> ctypes.CDLL | None:
    try:
        lib = ctypes.CDLL(SONAME, use_errno=True)
    except OSError:
        return None
    ptr = ctypes.c_void_p
    lib.libbpf_set_print.restype = ptr
    lib.libbpf_set_print.argtypes = [ptr]
    lib.bpf_object__open_mem.restype = ptr
    lib.bpf_object__open_mem.argtypes = [ptr, ctypes.c_size_t, ptr]
    lib.bpf_object__find_map_by_name.restype = ptr
    lib.bpf_object__find_map_by_name.argtypes = [ptr, ctypes.c_char_p]
    lib.bpf_map__reuse_fd.restype = ctypes.c_int
    lib.bpf_map__reuse_fd.argtypes = [ptr, ctypes.c_int]
    lib.bpf_object__load.restype = ctypes.c_int
    lib.bpf_object__load.argtypes = [ptr]
    lib.bpf_object__next_program.restype = ptr
    lib.bpf_object__next_program.argtypes = [ptr, ptr]
    lib.bpf_program__fd.restype = ctypes.c_int
    lib.bpf_program__fd.argtypes = [ptr]
    lib.bpf_object__close.restype = None
    lib.bpf_object__close.argtypes = [ptr]
    lib.libbpf_set_print(None)  # quiet: a failure is retried with bpftool, which tells
    return lib


def available() -> bool:
    """``libbpf.so.1`` can be loaded here."""
    return _lib() is not None


def load_program(obj: bytes, maps: Mapping[str, int]) -> int:
    """The one program of clang's object ``obj`` loaded, each map named in ``maps``
    being that fd: the program's fd (the caller's to close). :class:`LibbpfUnusable`
    when libbpf is missing, the object has no program, a map is missing or does not
    match, or the load fails."""
    lib = _lib()
    if lib is None:
        raise LibbpfUnusable(f"{SONAME} is not installed")
    buf = ctypes.create_string_buffer(obj, len(obj))  # libelf reads it in place
    handle = lib.bpf_object__open_mem(buf, len(obj), None)
    if not handle:
        raise LibbpfUnusable(f"bpf_object__open_mem: {os.strerror(ctypes.get_errno())}")
    try:
        for name, fd in maps.items():
            m = lib.bpf_object__find_map_by_name(handle, name.encode())
            if not m:
                raise LibbpfUnusable(f"the object has no map {name}")
            err = lib.bpf_map__reuse_fd(m, fd)
            if err:
                raise LibbpfUnusable(f"map {name}: {os.strerror(-err)}")
        err = lib.bpf_object__load(handle)
        if err:
            raise LibbpfUnusable(f"bpf_object__load: {os.strerror(-err)}")
        prog = lib.bpf_object__next_program(handle, None)
        if not prog or lib.bpf_object__next_program(handle, prog):
            raise LibbpfUnusable("the object must have one program")
        return os.dup(lib.bpf_program__fd(prog))  # the object's own is closed below
    finally:
        lib.bpf_object__close(handle)


__all__ = ["SONAME", "LibbpfUnusable", "available", "load_program"]
