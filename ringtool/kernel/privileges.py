"""Checks whether this process may load BPF programs and open perf events."""

from __future__ import annotations

import os

from ringtool.errors import PrivilegeError

CAP_SYS_ADMIN = 21
CAP_PERFMON = 38
CAP_BPF = 39


def effective_caps() -> int:
    """The effective capability mask of this process (from /proc/self/status)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def has_bpf_privileges() -> bool:
    """Root, or CAP_BPF + CAP_PERFMON, or CAP_SYS_ADMIN."""
    if os.geteuid() == 0:
        return True
    caps = effective_caps()

    def have(cap: int) -> bool:
        return bool(caps & (1 << cap))

    return have(CAP_SYS_ADMIN) or (have(CAP_BPF) and have(CAP_PERFMON))


def require_bpf_privileges(command: str) -> None:
    """Raise :class:`PrivilegeError` with the one-line fix unless privileged."""
    if not has_bpf_privileges():
        raise PrivilegeError(f"{command} needs root or CAP_BPF+CAP_PERFMON: run with sudo")
