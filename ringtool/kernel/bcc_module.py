"""What a compiled BCC module holds, read through libbcc's C API (``bcc.lib``,
``BPF.module``): its tables (name, fd, BCC's key/leaf type descriptions) and each
function's instructions as clang left them (BCC has written its tables' map fds into
the ``ld_imm64`` instructions by then).

Only the libbcc calls of bcc/libbcc.py (BCC 0.18 and later) are used; the few that
BCC's Python leaves without argument types get theirs here. A call that fails is a
:class:`ringtool.errors.RingtoolError` naming it.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any

from ringtool.errors import RingtoolError


@dataclass(frozen=True, slots=True)
class BccTable:
    """One of a module's tables: ``fd`` is its map in this process."""

    name: str
    fd: int
    key_desc: str
    leaf_desc: str


def _typed(lib: Any) -> Any:
    lib.bpf_num_tables.restype = ctypes.c_size_t
    lib.bpf_num_tables.argtypes = [ctypes.c_void_p]
    lib.bpf_table_name.restype = ctypes.c_char_p
    lib.bpf_table_name.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.bpf_table_fd_id.restype = ctypes.c_int
    lib.bpf_table_fd_id.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.bpf_table_key_desc_id.restype = ctypes.c_char_p
    lib.bpf_table_key_desc_id.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    lib.bpf_table_leaf_desc_id.restype = ctypes.c_char_p
    lib.bpf_table_leaf_desc_id.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return lib


def module_tables(lib: Any, module: int) -> list[BccTable]:
    """Every table of the BCC ``module`` (``lib``: ``bcc.lib``)."""
    lib = _typed(lib)
    out = []
    for i in range(lib.bpf_num_tables(module)):
        name = lib.bpf_table_name(module, i)
        fd = lib.bpf_table_fd_id(module, i)
        if name is None or fd < 0:
            raise RingtoolError(f"libbcc has no name or fd for table {i}")
        out.append(
            BccTable(
                name=name.decode(),
                fd=fd,
                key_desc=(lib.bpf_table_key_desc_id(module, i) or b"").decode(),
                leaf_desc=(lib.bpf_table_leaf_desc_id(module, i) or b"").decode(),
            )
        )
    return out


def function_insns(lib: Any, module: int, name: str) -> bytes:
    """The instructions of function ``name`` of the BCC ``module`` (a copy)."""
    start = lib.bpf_function_start(module, name.encode())
    size = lib.bpf_function_size(module, name.encode())
    if not start or not size:
        raise RingtoolError(f"libbcc has no instructions for function {name}")
    return ctypes.string_at(start, size)


__all__ = ["BccTable", "function_insns", "module_tables"]
