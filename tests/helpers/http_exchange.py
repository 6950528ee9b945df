"""A local HTTP exchange of a known size, for the dashboard's connections panel.

:func:`http_server` serves a directory with Python's ``http.server`` on 127.0.0.1 at a
port the kernel picks (a process of its own, in a cgroup when given), and always stops
it. :func:`fetch` runs a client as a process of a name of its own (``python -m
tests.helpers.http_exchange COMM URL``, in the cgroup when given) that reads the URL
whole and closes; it returns the body's length. ``http.server`` answers HTTP/1.0: it
closes the connection after the response, then the client closes its end.
:func:`held_open` keeps a connection to a port open (from a process of its own name)
until it leaves.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.paths import PY, ROOT


def in_cgroup(argv: list[str], cgroup: Path | None) -> list[str]:
    """``argv`` run by a shell that first moves itself into ``cgroup`` (None: as is)."""
    if cgroup is None:
        return argv
    quoted = " ".join(f"'{a}'" for a in argv)
    return ["sh", "-c", f"echo $$ > '{cgroup}/cgroup.procs' && exec {quoted}"]


@contextmanager
def http_server(directory: Path, cgroup: Path | None = None) -> Iterator[int]:
    """``http.server`` serving ``directory`` on 127.0.0.1; yields its port."""
    argv = [PY, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory",
            str(directory)]  # fmt: skip
    proc = subprocess.Popen(in_cgroup(argv, cgroup), stdout=subprocess.PIPE, text=True,
                            stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N (http://...) ..."
        words = line.split()
        assert "port" in words, f"http.server said {line!r}"
        yield int(words[words.index("port") + 1])
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def fetch(url: str, comm: str, cgroup: Path | None = None) -> int:
    """Fetch ``url`` from a process named ``comm``; the body's length."""
    argv = [PY, "-m", "tests.helpers.http_exchange", comm, url]
    out = subprocess.run(in_cgroup(argv, cgroup), cwd=ROOT, check=True, capture_output=True,
                         text=True, timeout=120).stdout  # fmt: skip
    return int(out)


@contextmanager
def held_open(port: int, comm: str) -> Iterator[int]:
    """A connection to 127.0.0.1:``port`` from a process named ``comm`` (yields its
    pid), open until the block ends (then it closes it and exits)."""
    argv = [PY, "-m", "tests.helpers.http_exchange", "--hold", comm, str(port)]
    proc = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "connected\n"
        yield proc.pid
    finally:
        proc.communicate(timeout=60)  # stdin closed: it closes the connection


def _hold(comm: str, port: int) -> None:
    Path("/proc/self/comm").write_text(comm)
    with socket.create_connection(("127.0.0.1", port), timeout=60):
        print("connected", flush=True)
        sys.stdin.read()  # until the test closes it


def _get(comm: str, url: str) -> int:
    Path("/proc/self/comm").write_text(comm)
    with urllib.request.urlopen(url, timeout=60) as reply:
        return len(reply.read())


if __name__ == "__main__":
    if sys.argv[1] == "--hold":
        _hold(sys.argv[2], int(sys.argv[3]))
    else:
        print(_get(sys.argv[1], sys.argv[2]))
