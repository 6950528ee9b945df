"""Syscall names for the numbers in syscall events: BCC's table of this machine's
architecture (``bcc.syscall``), cached; ``sys_<nr>`` where BCC is missing or does not
know the number. Needs no privilege (``ringtool collect`` names a fleet's syscalls
with it)."""

from __future__ import annotations

from collections.abc import Callable


def syscall_namer() -> Callable[[int], str]:
    """A function naming syscall numbers (see the module doc). BCC's table is imported
    at the first call, not here: importing BCC takes about 0.3 s, which a trace's
    start need not wait for."""
    cache: dict[int, str] = {}
    table: list[Callable[[int], bytes] | None] = []

    def name(nr: int) -> str:
        if nr not in cache:
            if not table:
                try:
                    from bcc.syscall import syscall_name
                except ImportError:
                    table.append(None)
                else:
                    table.append(syscall_name)
            lookup = table[0]
            try:
                cache[nr] = f"sys_{nr}" if lookup is None else lookup(nr).decode()
            except Exception:
                cache[nr] = f"sys_{nr}"
        return cache[nr]

    return name


__all__ = ["syscall_namer"]
