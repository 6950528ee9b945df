"""A process told apart from a later one with its pid: its start time.

A pid is reused once its process is gone; the pair (pid, start time) is not (the start
time is field 22 of ``/proc/<pid>/stat``, ``starttime`` in proc(5): clock ticks after
boot). Trace pin directories (:mod:`ringtool.trace.reading.marks`) and TC filter names
(:mod:`ringtool.trace.reading.net_filters`) carry it so that a dead trace is never taken for a
live one.
"""

from __future__ import annotations


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


__all__ = ["is_running", "process_key", "process_start"]
