"""The parents of the processes that run when a trace starts, for exec events' ppid.

``bpf/trace_exec.c`` learns a process's parent at fork (``parent_of``: child pid ->
parent tgid) and reads no ``task_struct`` (the kernel headers BCC compiles against may
not match the running kernel). A process forked before the trace started would have
ppid 0; :func:`seed_parents` writes each running process's parent from
``/proc/PID/stat`` into the map before the programs attach, in one
``BPF_MAP_UPDATE_BATCH`` (one syscall, not one per process; element by element where
the kernel has none). A process reparented
later (its parent exited) keeps the parent it had; execsnoop, which reads
``task->real_parent``, would show the new one. :func:`parent_of` is one process's
parent (the dashboard's tree places processes older than the trace with it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from ringtool.kernel import bpf
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


def parents_to_seed(limit: int = 32768, proc: str = "/proc") -> list[tuple[int, int]]:
    """``(pid, ppid)`` of up to ``limit`` running processes (:func:`running_parents`)."""
    pairs: list[tuple[int, int]] = []
    for pair in running_parents(proc):
        if len(pairs) >= limit:
            break
        pairs.append(pair)
    return pairs


def seed_parents(table: ProgramTable, limit: int = 32768) -> int:
    """Write up to ``limit`` running processes' parents into the hash ``table``
    (``u32 pid -> u32 tgid``, the map's LRU keeps room for forks) in one batch, or one
    by one where the kernel has no batch update; returns how many."""
    pairs = parents_to_seed(limit)
    bpf.map_update_many(
        table.map_fd,
        [(pid.to_bytes(4, "little"), ppid.to_bytes(4, "little")) for pid, ppid in pairs],
    )
    return len(pairs)


__all__ = ["parent_of", "parents_to_seed", "running_parents", "seed_parents"]
