"""Syscall names for the numbers in syscall events, from the running kernel's own table.

The names come from, first to last (a number takes the first name found for it):

1. the running kernel's generated header,
   ``/lib/modules/$(uname -r)/build/arch/<arch>/include/generated/uapi/asm/unistd_64.h``
   (present where its headers are installed: BPF programs are compiled against them);
2. the C library's copy of the kernel headers,
   ``/usr/include/<multiarch>/asm/unistd_64.h`` (and ``asm-generic/unistd.h`` on an
   architecture numbered by it, arm64);
3. BCC's table (``bcc.syscall``), which stops at the kernel it was made for (BCC 0.26:
   before ``close_range``, 436).

So a number the running kernel has is named as its headers name it (``close_range``,
``futex_waitv``), and ``sys_<nr>`` is left for a number none of them knows. A namer
(:func:`syscall_namer`) reads the table once, when it is made, and keeps it (no state
outside it). Needs no privilege (``ringtool collect`` names a fleet's syscalls with
it).
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import MappingProxyType

#: Per machine: the kernel's arch directory, the C library's multiarch directory, and
#: whether the architecture numbers its syscalls as ``asm-generic/unistd.h`` does.
_ARCH = {
    "x86_64": ("x86", "x86_64-linux-gnu", False),
    "aarch64": ("arm64", "aarch64-linux-gnu", True),
}

_DEFINE = re.compile(r"^#define\s+(__NR3264_\w+|__NR_\w+)\s+(\w+)\s*$", re.MULTILINE)


def header_paths(release: str | None = None, machine: str | None = None) -> list[Path]:
    """The headers :func:`syscall_table` reads for this kernel, in order (see the module
    doc); ``release``/``machine`` default to the running kernel's (``uname``). A machine
    not in the table has none: BCC's table alone names its syscalls."""
    release = release or os.uname().release
    known = _ARCH.get(machine or platform.machine())
    if known is None:
        return []
    arch, multiarch, generic = known
    return [
        Path(f"/lib/modules/{release}/build/arch/{arch}/include/generated/uapi/asm/unistd_64.h"),
        Path(f"/usr/include/{multiarch}/asm/unistd_64.h"),
        *([Path("/usr/include/asm-generic/unistd.h")] if generic else []),
    ]


def parse_header(text: str) -> dict[int, str]:
    """The ``__NR_name number`` definitions of a ``unistd`` header as number -> name;
    a definition by another name (``#define __NR_fcntl __NR3264_fcntl``) takes that
    name's number; anything else (a macro expression) is skipped."""
    values: dict[str, int] = {}
    names: dict[int, str] = {}
    for macro, value in _DEFINE.findall(text):
        nr = int(value, 0) if value[0].isdigit() else values.get(value)
        if nr is None:
            continue
        values[macro] = nr
        if macro.startswith("__NR_") and not macro.startswith("__NR_syscalls"):
            names.setdefault(nr, macro[len("__NR_") :])
    return names


def _bcc_names() -> dict[int, str]:
    """BCC's table for this machine (empty without BCC). Its module ``bcc.syscall`` is a
    table of its own (it imports nothing of BCC), so it is run from its file: importing
    it as ``bcc.syscall`` would import the ``bcc`` package and load libbcc first (about
    0.3 s of a warm start)."""
    spec = importlib.util.find_spec("bcc")  # finds the package without importing it
    for where in (spec.submodule_search_locations or []) if spec else []:
        path = Path(where, "syscall.py")
        table = importlib.util.spec_from_file_location("ringtool_bcc_syscall", path)
        if table is None or table.loader is None or not path.is_file():
            continue
        module = importlib.util.module_from_spec(table)
        try:
            table.loader.exec_module(module)
            return {int(nr): bytes(name).decode() for nr, name in module.syscalls.items()}
        except Exception:  # a BCC without ausyscall raises a bare Exception
            return {}
    return {}


def syscall_table(paths: tuple[Path, ...] | None = None, bcc: bool = True) -> Mapping[int, str]:
    """Number -> name from the headers at ``paths`` (default :func:`header_paths`), the
    first that names a number winning, then BCC's table (``bcc``) for what they lack."""
    names: dict[int, str] = {}
    sources: Iterable[Path] = header_paths() if paths is None else paths
    for path in sources:
        try:
            text = path.read_text(errors="replace")
        except OSError:  # not installed: the next one
            continue
        for nr, name in parse_header(text).items():
            names.setdefault(nr, name)
    if bcc:
        for nr, name in _bcc_names().items():
            names.setdefault(nr, name)
    return MappingProxyType(names)


def syscall_namer() -> Callable[[int], str]:
    """A function naming syscall numbers (see the module doc): ``sys_<nr>`` for a number
    no table names. The headers are read now; BCC's table at the first number they do
    not name."""
    table = syscall_table(bcc=False)
    bcc: list[Mapping[int, str]] = []

    def name(nr: int) -> str:
        found = table.get(nr)
        if found is None:
            if not bcc:
                bcc.append(_bcc_names())
            found = bcc[0].get(nr)
        return found or f"sys_{nr}"

    return name


__all__ = ["header_paths", "parse_header", "syscall_namer", "syscall_table"]
