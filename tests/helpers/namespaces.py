"""Running a piece of Python in other namespaces (``unshare``; needs root)."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.helpers.paths import ROOT

#: A new PID namespace with its own /proc (a container sharing the host's network).
PID_NS = ("-p", "-f", "--mount-proc")
#: A new time namespace whose boot time is 100000 s off ours (fs/proc/array.c: start
#: times read there are shifted by it).
TIME_NS = ("-T", "--boottime", "100000", "-f")


def python_in(unshare: tuple[str, ...], code: str) -> str:
    """What ``code`` prints (stripped), run by this Python under ``unshare UNSHARE``
    from the repository root."""
    return subprocess.run(
        ["unshare", *unshare, sys.executable, "-c", code], cwd=ROOT, capture_output=True,
        text=True, check=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)},
    ).stdout.strip()  # fmt: skip


__all__ = ["PID_NS", "TIME_NS", "python_in"]
