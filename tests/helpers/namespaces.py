"""Running a piece of Python in other namespaces (``unshare``; needs root)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

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


@contextmanager
def live_pid_namespace() -> Iterator[str]:
    """A namespace key (:func:`ringtool.kernel.proc_start.namespace_key`: PID
    namespace, our time namespace) of a PID namespace with a process running in it
    (``sleep`` under ``unshare``, a container's stand-in) while the block runs."""
    ours = os.stat("/proc/self/ns/pid").st_ino
    outer = subprocess.Popen(["unshare", "--kill-child", *PID_NS, "sleep", "600"])
    try:
        deadline = time.monotonic() + 30
        while True:
            with open(f"/proc/{outer.pid}/task/{outer.pid}/children") as f:
                children = f.read().split()
            inner = [os.stat(f"/proc/{c}/ns/pid").st_ino for c in children]
            if inner and inner[0] != ours:
                break
            assert time.monotonic() < deadline, "unshare started no process"
            time.sleep(0.01)
        timens = os.stat("/proc/self/ns/time").st_ino
        yield f"{inner[0]}_{timens}"
    finally:
        outer.kill()  # --kill-child: the namespace's init (sleep) dies with it
        outer.wait()


__all__ = ["PID_NS", "TIME_NS", "live_pid_namespace", "python_in"]
