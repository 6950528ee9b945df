"""The tracers ``ringtool bench peers`` compares: how to start each, whether it is
installed, and how to install it.

Each traces ``openat`` of every process (no filter, like opensnoop) and prints one
line per event to its stdout (a file the bench reads afterwards): ringtool
(``trace --events open --json``, and the default sources with ``--json``), bpftrace
(a one-liner like opensnoop.bt on ``syscalls:sys_{enter,exit}_openat``), Debian's
libbpf-tools ``opensnoop`` (CO-RE, on the same tracepoints) and BCC's Python
opensnoop on the same tracepoints (:mod:`ringtool.bench.peer_opensnoop`). The
peers' Debian packages are installed by ``scripts/setup-peers.sh``, never by the
project's own setup.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

#: bpftrace's opensnoop (tools/opensnoop.bt) on openat only: the path at entry per
#: thread, one printf per call at exit.
BPFTRACE_PROGRAM = (
    "tracepoint:syscalls:sys_enter_openat { @filename[tid] = args->filename; } "
    "tracepoint:syscalls:sys_exit_openat /@filename[tid]/ { $ret = args->ret; "
    "$fd = $ret >= 0 ? $ret : -1; $errno = $ret >= 0 ? 0 : - $ret; "
    'printf("%-6d %-16s %4d %3d %s\\n", pid, comm, $fd, $errno, str(@filename[tid])); '
    "delete(@filename[tid]); }"
)
SETUP_SCRIPT = "scripts/setup-peers.sh"
#: Debian's libbpf-tools opensnoop (dpkg -L libbpf-tools)
LIBBPF_OPENSNOOP = Path("/usr/sbin/opensnoop")


@dataclass(frozen=True)
class Tracer:
    """One tracer: ``argv`` (empty for the untraced baseline), the executable that
    must exist (``needs``) and the Debian package that has it."""

    name: str
    argv: tuple[str, ...]
    needs: str | None = None
    package: str | None = None

    def missing(self) -> str | None:
        """Why it cannot run here (with the command that installs it), or None."""
        if self.needs is None or Path(self.needs).exists() or shutil.which(self.needs):
            return None
        return (f"{self.needs} not found: install with `sudo {SETUP_SCRIPT}` "
                f"(apt-get install {self.package})")  # fmt: skip


def tracers() -> tuple[Tracer, ...]:
    """The baseline first, then every tracer, in the order of each round."""
    py = sys.executable
    ringtool = (py, "-m", "ringtool.cli.main", "trace")
    return (
        Tracer("no tracer", ()),
        Tracer("ringtool --events open --json", (*ringtool, "--events", "open", "--json")),
        Tracer("ringtool default sources --json", (*ringtool, "--json")),
        Tracer("BCC Python opensnoop (tracepoints)", (py, "-m", "ringtool.bench.peer_opensnoop"),
               needs="/usr/lib/python3/dist-packages/bcc/__init__.py", package="python3-bpfcc"),
        Tracer("bpftrace", ("bpftrace", "-e", BPFTRACE_PROGRAM), needs="bpftrace",
               package="bpftrace"),
        Tracer("libbpf-tools opensnoop", (str(LIBBPF_OPENSNOOP),), needs=str(LIBBPF_OPENSNOOP),
               package="libbpf-tools"),
    )  # fmt: skip


__all__ = ["BPFTRACE_PROGRAM", "LIBBPF_OPENSNOOP", "SETUP_SCRIPT", "Tracer", "tracers"]
