"""Syscall names for the numbers in syscall events: BCC's table of this machine's
architecture (``bcc.syscall``), cached; ``sys_<nr>`` where BCC is missing or does not
know the number. Needs no privilege (``ringtool collect`` names a fleet's syscalls
with it)."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path


def _bcc_syscall_name() -> Callable[[int], bytes] | None:
    """BCC's ``bcc.syscall.syscall_name``, or None without BCC. Its module is a table
    of its own (it imports nothing of BCC), so it is run from its file: importing it
    as ``bcc.syscall`` would import the ``bcc`` package and load libbcc first (about
    0.3 s, at the first syscall event of a trace); as a package import where that
    fails."""
    spec = importlib.util.find_spec("bcc")  # finds the package without importing it
    for where in (spec.submodule_search_locations or []) if spec else []:
        path = Path(where, "syscall.py")
        table = importlib.util.spec_from_file_location("ringtool_bcc_syscall", path)
        if table is None or table.loader is None or not path.is_file():
            continue
        module = importlib.util.module_from_spec(table)
        try:
            table.loader.exec_module(module)
            found: Callable[[int], bytes] = module.syscall_name
        except Exception:
            break
        return found
    try:
        from bcc.syscall import syscall_name
    except Exception:  # ImportError; BCC raises a bare Exception without ausyscall
        return None
    return syscall_name  # type: ignore[no-any-return]


def syscall_namer() -> Callable[[int], str]:
    """A function naming syscall numbers (see the module doc). BCC's table is read at
    the first call, not here."""
    cache: dict[int, str] = {}
    table: list[Callable[[int], bytes] | None] = []

    def name(nr: int) -> str:
        if nr not in cache:
            if not table:
                table.append(_bcc_syscall_name())
            lookup = table[0]
            try:
                cache[nr] = f"sys_{nr}" if lookup is None else lookup(nr).decode()
            except Exception:
                cache[nr] = f"sys_{nr}"
        return cache[nr]

    return name


__all__ = ["syscall_namer"]
