"""``ringtool trace``'s targets checked against the running system before loading:
an interface that does not exist is a usage error; a ``-p``/``-t`` that matches no
live task is worth one note (it may come: the trace goes on). And the targets as the
dashboard's header shows them (:func:`shown_filters`).

Reads ``/proc`` and ``if_nametoindex(3)`` only (no privileges, no BCC).
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from pathlib import Path

from ringtool.errors import UsageError


def require_interface(name: str) -> None:
    """Raise :class:`UsageError` when there is no network interface ``name``."""
    import socket  # here: its import costs every trace's start-up milliseconds

    try:
        socket.if_nametoindex(name)
    except OSError:
        raise UsageError(f"-i {name}: no such network interface (`ip link` lists them)") from None


def _tgid(tid: int, proc: Path) -> int | None:
    """The process (tgid) of task ``tid``, or None when there is no such task."""
    try:
        status = (proc / str(tid) / "status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("Tgid:"):
            return int(line.split()[1])
    return None


def target_notes(pid: int | None, tid: int | None, proc: Path = Path("/proc")) -> list[str]:
    """One line for each of ``-p pid``/``-t tid`` that matches no live process or
    thread now (in this pid namespace)."""
    notes = []
    if pid is not None:
        tgid = _tgid(pid, proc)
        if tgid is None:
            notes.append(f"-p {pid}: no such process now; tracing in case it appears")
        elif tgid != pid:
            notes.append(
                f"-p {pid}: a thread of process {tgid}, not a process: -p takes a process "
                f"id, -t a thread's; tracing in case process {pid} appears"
            )
    if tid is not None and _tgid(tid, proc) is None:
        notes.append(f"-t {tid}: no such thread now; tracing in case it appears")
    return notes


def shown_filters(
    args: argparse.Namespace, events: Sequence[str], default: Sequence[str]
) -> tuple[str, ...]:
    """Every filter of the command line as its flag and value (``--events open``, ``-p
    1234``, ``-t``, ``-c bash``, ``-u 1000``, ``--cgroup PATH``, ``-n REGEX``, ``-x``),
    values shell-quoted; ``--events`` only when ``events`` are not the ``default``
    ones. For the dashboard's header (it makes them printable)."""
    shown = [] if tuple(events) == tuple(default) else [f"--events {','.join(events)}"]
    values = (("-p", args.pid), ("-t", args.tid), ("-c", args.comm), ("-u", args.uid),
              ("--cgroup", args.cgroup and args.cgroup.path),
              ("-n", args.name and args.name.pattern))  # fmt: skip
    shown += [f"{flag} {shlex.quote(str(value))}" for flag, value in values if value is not None]
    return (*shown, *(["-x"] if args.failed else []))


__all__ = ["require_interface", "shown_filters", "target_notes"]
