"""The parents of the processes that run when a trace starts, for exec events' ppid.

``bpf/trace_exec.c`` learns a process's parent at fork (``parent_of``: child pid ->
parent tgid) and reads no ``task_struct`` (the kernel headers BCC compiles against may
not match the running kernel). A process forked before the trace started would have
ppid 0; :func:`seed_parents` writes each running process's parent from
``/proc/PID/stat`` into the map before the programs attach. A process reparented
later (its parent exited) keeps the parent it had; execsnoop, which reads
``task->real_parent``, would show the new one. :func:`parent_of` is one process's
parent (the dashboard's tree places processes older than the trace with it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ringtool.kernel.c_ints import u32
from ringtool.programs.loaded import ProgramTable


def parent_of(pid: int, proc: str = "/proc") -> int | None:
    """The parent of process ``pid`` as ``proc`` has it now (None: gone, or no parent
    field). The comm in ``stat`` may hold spaces and parentheses: the fields after it
    start after its last ``)``."""
    try:
        with open(f"{proc}/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def running_parents(proc: str = "/proc") -> Iterator[tuple[int, int]]:
    """``(pid, ppid)`` of every process in ``proc`` (one that exits meanwhile is left
    out)."""
    for name in os.listdir(proc):
        if name.isdigit() and (ppid := parent_of(int(name), proc)) is not None:
            yield int(name), ppid


def seed_parents(table: ProgramTable, limit: int = 32768) -> int:
    """Write up to ``limit`` running processes' parents into the BCC hash ``table``
    (``u32 pid -> u32 tgid``, the map's LRU keeps room for forks); returns how many."""
    n = 0
    for pid, ppid in running_parents():
        if n >= limit:
            break
        table[u32(pid)] = u32(ppid)
        n += 1
    return n


__all__ = ["parent_of", "running_parents", "seed_parents"]
