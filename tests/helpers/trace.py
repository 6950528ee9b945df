"""Trace runs for the kernel tests: ``ringtool trace`` as a subprocess (:class:`Trace`),
in-process sessions (:func:`session`, :func:`traced`, :func:`drain`, :func:`counts`), and
the real workload processes they watch (:class:`Worker`, :func:`unique_comm`), and a
running trace's marker directory (:func:`marker_dir`)."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from ringtool.event.layout import load_layout
from ringtool.trace.reading.marks import PIN_ROOT
from ringtool.trace.reading.session import TraceOptions, TraceSession
from tests.helpers.json_schema import check_lines, check_trace_output
from tests.helpers.paths import RINGTOOL
from tests.helpers.procs import Lines


class Trace(Lines):
    """``ringtool trace ARGS`` (see :class:`Lines`), started: its start line came (on
    stderr: stdout carries events only). ``start_timeout``: seconds to wait for it (BCC
    compiles each source first: over a minute for the three default sources under
    one-thread emulation on a loaded machine)."""

    def __init__(self, *args: str, start_timeout: float = 240) -> None:
        super().__init__([*RINGTOOL, "trace", *args])
        self.args = args
        ready = ("--json" in args and '"type": "start"') or "Tracing... Ctrl-C to end."
        deadline = time.monotonic() + start_timeout
        while not any(ready in line for line in list(self.err_lines)):
            assert self.proc.poll() is None, self.err
            assert time.monotonic() < deadline, "ringtool trace did not start"
            time.sleep(0.05)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def finish(self, timeout: float = 60) -> tuple[list[str], str]:
        """Wait for the exit (status 0, no traceback); all stdout lines and stderr."""
        self.proc.wait(timeout=timeout)
        self.join()
        err = self.err
        assert self.proc.returncode == 0, err
        assert "Traceback" not in err, err
        check_trace_output(self.args, self.lines, self.err_lines)  # the schema
        return self.lines, err


def marker_dir(t: Trace) -> str:
    """The marker directory the running trace ``t`` pinned (ringtool/trace/reading/marks.py)."""
    (name,) = [n for n in os.listdir(PIN_ROOT) if n.startswith(f"{t.proc.pid}-")]
    return os.path.join(PIN_ROOT, name)


def told_json(err: str, partial: bool = False) -> list[dict[str, Any]]:
    """The JSON lines (start, stats, note) a ``--json`` trace wrote on stderr, each
    checked against the schema (:mod:`tests.helpers.json_schema`; partial: the trace
    ran with ``--fields``)."""
    return check_lines((line for line in err.splitlines() if line.startswith("{")), partial)


#: The child: set the comm, report ready, wait for go, run the loop, _exit.
_CHILD = r"""
import ctypes, os, sys
name, op, path, n = sys.argv[1].encode(), sys.argv[2], sys.argv[3], int(sys.argv[4])
assert ctypes.CDLL(None, use_errno=True).prctl(15, name, 0, 0, 0) == 0  # PR_SET_NAME
sys.stdout.write("ready\n"); sys.stdout.flush()
sys.stdin.readline()
if op == "open":
    for _ in range(n):
        os.close(os.open(path, os.O_RDONLY))
elif op == "seq":  # opens of path/0, path/1, ... (missing files: failed opens)
    for i in range(n):
        try:
            os.close(os.open(f"{path}/{i}", os.O_RDONLY))
        except OSError:
            pass
elif op == "fork":
    for _ in range(n):
        if os.fork() == 0:
            os._exit(0)
        os.wait()
os._exit(0)
"""


class GoChild:
    """A workload child started with a pipe on stdin and stdout (``proc``): it waits for
    ``go`` (:meth:`go`) before it works; :meth:`wait` expects exit status 0."""

    proc: subprocess.Popen[str]

    @property
    def pid(self) -> int:
        return self.proc.pid

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def wait(self) -> None:
        assert self.proc.wait(timeout=120) == 0


class Worker(GoChild):
    """A child process that does ``n`` opens of ``path`` (``seq``: of ``path/0``,
    ``path/1``, ...; or ``n`` forks) on go."""

    def __init__(self, name: str, op: str, path: Path, n: int) -> None:
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _CHILD, name, op, str(path), str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"


def unique_comm() -> str:
    return "rtf" + secrets.token_hex(6)  # 15 bytes: the whole kernel comm


def hot_file(tmp_path: Path) -> Path:
    """A file in ``tmp_path`` for workers to open."""
    target = tmp_path / "hot"
    target.write_text("x")
    return target


@contextmanager
def session(opts: TraceOptions) -> Iterator[TraceSession]:
    s = TraceSession(opts, load_layout())
    try:
        assert s.rb is not None and not s.notes, s.notes
        yield s
    finally:
        s.close()


def drain(s: TraceSession) -> np.ndarray:  # type: ignore[type-arg]
    parts = []
    while len(batch := s.read_events()):
        parts.append(batch)
    return np.concatenate(parts) if parts else np.empty(0, dtype=s.layout.event)


def counts(s: TraceSession) -> tuple[np.ndarray, int, int]:  # type: ignore[type-arg]
    """All records (read after the load), the drop and the lost totals."""
    return drain(s), sum(s.dropped_per_cpu()), sum(s.lost_per_cpu().values())


@contextmanager
def traced(opts: TraceOptions) -> Iterator[TraceSession]:
    """A loaded session whose sources are attached (``start``: attach after load)."""
    with session(opts) as s:
        start = getattr(s, "start", None)
        if start is not None:
            start()
        yield s
