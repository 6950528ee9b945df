"""What ringtool uses of a loaded ``bpf/`` program, whether BCC compiled it (a
``bcc.BPF`` object, which has all of this) or the program cache loaded it
(:class:`ringtool.programs.cached.CachedProgram`): :class:`LoadedProgram`.

Users (the trace session, its histogram and cost readers, the loader's attach and
detach) take a LoadedProgram and use nothing else of either, so the two stay
interchangeable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol


class ProgramTable(Protocol):
    """A table (BPF map) by name: its fd, its capacity, and the mapping operations used on it
    (keys and values as ctypes scalars or ints; ``Key``/``Leaf`` build them)."""

    map_fd: int
    max_entries: int
    Key: Any
    Leaf: Any

    def __getitem__(self, key: Any) -> Any: ...

    def __setitem__(self, key: Any, value: Any) -> None: ...

    def items(self) -> Iterable[tuple[Any, Any]]: ...

    def clear(self) -> None: ...


class ProgramFunction(Protocol):
    """A loaded function: its name (``tracepoint__cat__event``, ...) and program fd."""

    @property
    def name(self) -> bytes: ...

    @property
    def fd(self) -> int: ...


class LoadedProgram(Protocol):
    """A compiled file's programs and tables (see the module doc): ``obj[b"name"]`` a
    table, ``funcs`` the loaded functions, the fds of its attachments (tracepoint
    ``b"cat:event"`` -> perf fd, raw tracepoint name -> link fd; the loader's
    :func:`~ringtool.programs.loader.detach_points` closes and clears them), and
    ``cleanup()`` closing everything still open."""

    tracepoint_fds: dict[bytes, int]
    raw_tracepoint_fds: dict[bytes, int]

    @property
    def funcs(self) -> Mapping[bytes, ProgramFunction]: ...

    def __getitem__(self, name: bytes) -> ProgramTable: ...

    def cleanup(self) -> None: ...


__all__ = ["LoadedProgram", "ProgramFunction", "ProgramTable"]
