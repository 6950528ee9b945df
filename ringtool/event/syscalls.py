"""Syscall names for the numbers in syscall events: BCC's table of this machine's
architecture (``bcc.syscall``), cached; ``sys_<nr>`` where BCC is missing or does not
know the number. Needs no privilege (``ringtool collect`` names a fleet's syscalls
with it)."""

from __future__ import annotations

from collections.abc import Callable


def syscall_namer() -> Callable[[int], str]:
    """A function naming syscall numbers (see the module doc)."""
    try:
        from bcc.syscall import syscall_name
    except ImportError:
        return lambda nr: f"sys_{nr}"
    cache: dict[int, str] = {}

    def name(nr: int) -> str:
        if nr not in cache:
            try:
                cache[nr] = syscall_name(nr).decode()
            except Exception:
                cache[nr] = f"sys_{nr}"
        return cache[nr]

    return name


__all__ = ["syscall_namer"]
