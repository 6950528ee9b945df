"""A process told apart from a later one with its pid: its start time.

A pid is reused once its process is gone; the pair (pid, start time) is not (the start
time is field 22 of ``/proc/<pid>/stat``, ``starttime`` in proc(5): clock ticks after
boot). Trace pin directories (:mod:`ringtool.trace.reading.marks`) and TC filter names
(:mod:`ringtool.trace.reading.net_filters`) carry it so that a dead trace is never taken for a
live one.

Pids and start times are relative to the reader's PID and time namespaces
(:func:`namespace_key`): a name made in other namespaces is judged here only where its
process certainly runs no more (:func:`liveness`): no process is left in its PID
namespace (seen from the initial one, where every process is), or, in our PID namespace
but another time namespace, no process has its pid. Otherwise it is never taken for a
dead process's (None).
"""

from __future__ import annotations

import os

#: The initial PID namespace's inode (``PROC_PID_INIT_INO``, include/linux/proc_ns.h):
#: a reader there sees every process in ``/proc``.
INIT_PID_NS = str(0xEFFFFFFC)


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


def _nested(pid: str) -> bool:
    """Whether process ``pid`` is in a PID namespace below ours (its ``NSpid`` line in
    ``/proc/<pid>/status`` has more than one pid); True when that cannot be read."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"NSpid:"):
                    return len(line.split()) != 2
    except FileNotFoundError:
        return False
    except OSError:
        pass
    return True


def proc_hides_processes(mountinfo: str = "/proc/self/mountinfo") -> bool:
    """Whether our ``/proc`` (its last mount: the one on top) has ``hidepid=`` 1 or more
    (proc(5)): a process we may not ptrace is then missing from its listing; True when
    that cannot be read."""
    hides = True
    try:
        with open(mountinfo) as f:
            for line in f:
                fields, _, sb = line.partition(" - ")
                if fields.split()[4:5] == ["/proc"] and sb.startswith("proc "):
                    parts = sb.split()
                    opts = parts[2].split(",") if len(parts) > 2 else []
                    hides = any(o.startswith("hidepid=") and o[8:] not in ("0", "off")
                                for o in opts)  # fmt: skip
    except OSError:
        return True
    return hides


def pid_namespace_used(inode: str) -> bool:
    """Whether a process in our ``/proc`` is in the PID namespace of inode ``inode``
    (``/proc/<pid>/ns/pid``); True also when that cannot be told (a process whose
    namespace link we may not read, ptrace(2)'s access mode, below our namespace)."""
    want = f"pid:[{inode}]"
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/ns/pid") == want:
                return True
        except FileNotFoundError:  # gone meanwhile
            continue
        except OSError:
            if _nested(pid):
                return True
    return False


def liveness(key: str, key_ns: str, ns: str) -> bool | None:
    """Does the process ``key`` (``PID-START``), named in the namespaces ``key_ns``,
    still run, asked in the namespaces ``ns`` (both :func:`namespace_key`)? None when
    that cannot be told here: ``ns`` ``?``, ``key`` not a :func:`process_key`, or other
    namespaces than ours where the process may still run. Of other namespaces, False
    only when it certainly does not: our PID namespace but another time namespace and
    no process with its pid, or, asked from the initial PID namespace, no process left
    in its PID namespace (a container gone, or the process was its init) and ``/proc``
    hides none (:func:`proc_hides_processes`)."""
    pid, _, start = key.partition("-")
    if ns == "?" or not (pid.isdigit() and start.isdigit()):
        return None
    if key_ns == ns:
        return is_running(key)
    key_pid_ns, our_pid_ns = key_ns.partition("_")[0], ns.partition("_")[0]
    if not key_pid_ns.isdigit():
        return None
    if key_pid_ns == our_pid_ns:  # another time namespace: the pid is ours to look up
        return None if process_start(int(pid)) is not None else False
    if our_pid_ns != INIT_PID_NS or proc_hides_processes() or pid_namespace_used(key_pid_ns):
        return None
    return False


__all__ = [
    "INIT_PID_NS",
    "is_running",
    "liveness",
    "namespace_key",
    "pid_namespace_used",
    "proc_hides_processes",
    "process_key",
    "process_start",
]
