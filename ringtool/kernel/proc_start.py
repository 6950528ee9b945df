"""A process told apart from a later one with its pid: its start time.

A pid is reused once its process is gone; the pair (pid, start time) is not (the start
time is field 22 of ``/proc/<pid>/stat``, ``starttime`` in proc(5): clock ticks after
boot). Trace pin directories (:mod:`ringtool.trace.reading.marks`) and TC filter names
(:mod:`ringtool.trace.reading.net_filters`) carry it so that a dead trace is never taken for a
live one.

Pids and start times are relative to the reader's PID and time namespaces
(:func:`namespace_key`): a name made in other namespaces cannot be judged here
(:func:`liveness` says None), so it is never taken for a dead process's.
"""

from __future__ import annotations

import os


def process_start(pid: int) -> int | None:
    """The start time (clock ticks after boot) of process ``pid``; None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    # the comm (field 2) may hold spaces and parentheses: split after the last ')'
    return int(stat[stat.rindex(b")") + 2 :].split()[19])


def process_key(pid: int) -> str:
    """``<pid>-<start>``: the process, told apart from a later one with its pid."""
    return f"{pid}-{process_start(pid)}"


def is_running(key: str) -> bool:
    """Whether the process of ``key`` (a :func:`process_key`) still runs."""
    pid, _, start = key.partition("-")
    return pid.isdigit() and start.isdigit() and process_key(int(pid)) == key


def namespace_key() -> str:
    """``<pid ns>_<time ns>``: the inodes of our PID and time namespaces, which the
    pids and start times we read in ``/proc`` are relative to (start times are shifted
    by a time namespace's boot-time offset, fs/proc/array.c); ``?`` when our ``/proc``
    is not of our PID namespace (then no liveness can be told here). No ``.``: bpffs
    refuses names holding one (``bpf_lookup`` in kernel/bpf/inode.c)."""
    if os.readlink("/proc/self") != str(os.getpid()):
        return "?"
    keys = []
    for ns in ("pid", "time"):
        try:
            keys.append(str(os.stat(f"/proc/self/ns/{ns}").st_ino))
        except FileNotFoundError:  # a kernel without time namespaces: one time base
            keys.append("0")
    return "_".join(keys)


def liveness(key: str, key_ns: str, ns: str) -> bool | None:
    """Does the process ``key`` (``PID-START``), named in the namespaces ``key_ns``,
    still run, asked in the namespaces ``ns`` (both :func:`namespace_key`)? None when
    that cannot be told here: other namespaces than ours, ``ns`` ``?``, or ``key`` not
    a :func:`process_key`."""
    pid, _, start = key.partition("-")
    if ns == "?" or key_ns != ns or not (pid.isdigit() and start.isdigit()):
        return None
    return is_running(key)


__all__ = ["is_running", "liveness", "namespace_key", "process_key", "process_start"]
