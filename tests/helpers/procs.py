"""Process plumbing: child helper processes (``python -m tests.adversarial.<name>``),
lines of their pipes read with deadlines (:class:`LineReader`, :class:`Lines`), bounded
waits, sure cleanup.

Every wait here has a deadline; every process started is killed (by its own pid) in a
``finally``.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Any

from tests.helpers.json_schema import check_trace_output
from tests.helpers.paths import PY, RINGTOOL, ROOT

#: BCC compiles at start: over a minute in an emulated guest on a loaded machine
START_TIMEOUT = 240.0


def child(
    module: str, *args: str, stdout: int | IO[Any] = subprocess.PIPE
) -> subprocess.Popen[str]:
    """``python -m tests.adversarial.<module> args...`` from the repository root."""
    return subprocess.Popen(
        [PY, "-m", f"tests.adversarial.{module}", *args],
        cwd=ROOT,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_ringtool(*args: str, timeout: float = 60, **kw: Any) -> subprocess.CompletedProcess[str]:
    """``ringtool ARGS`` run to its end from the repository root, its output captured;
    a ``trace --json`` that succeeded has its lines checked against the schema
    (:mod:`tests.helpers.json_schema`)."""
    done = subprocess.run(
        [*RINGTOOL, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, **kw
    )
    if args[:1] == ("trace",) and done.returncode == 0 and isinstance(done.stdout, str):
        check_trace_output(args, done.stdout.splitlines(), done.stderr.splitlines())
    return done


def stop(p: subprocess.Popen[str] | None, sig: int = signal.SIGTERM, wait: float = 10) -> None:
    """Signal ``p`` (by pid), then SIGKILL it if it is not gone within ``wait`` s."""
    if p is None or p.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        p.send_signal(sig)
    try:
        p.wait(wait)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            p.kill()
        p.wait(10)


class Lines:
    """A subprocess whose stdout is read by a thread as it comes, line by line into
    ``lines`` (a full pipe would stall it: a tracer would drop events); with the
    default ``stderr`` (a pipe) its stderr likewise into ``err_lines``."""

    def __init__(self, argv: list[str], *, stderr: Any = subprocess.PIPE) -> None:
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr,
                                     text=True)  # fmt: skip
        self.lines: list[str] = []
        self.err_lines: list[str] = []
        pipes = [(self.proc.stdout, self.lines)]
        if stderr is subprocess.PIPE:
            pipes.append((self.proc.stderr, self.err_lines))
        self._readers = [
            threading.Thread(target=self._read, args=pipe, daemon=True) for pipe in pipes
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _read(stream: Any, into: list[str]) -> None:
        for line in stream:
            into.append(line.rstrip("\n"))

    def join(self) -> None:
        """Wait for the readers (after the process ended)."""
        for reader in self._readers:
            reader.join(timeout=10)

    @property
    def err(self) -> str:
        """stderr so far (the default pipe)."""
        return "".join(line + "\n" for line in list(self.err_lines))


class LineReader:
    """Lines of a child's pipe, read by a daemon thread, fetched with a deadline."""

    def __init__(self, stream: IO[str] | None) -> None:
        assert stream is not None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line)
        self.lines.put(None)

    def get(self, timeout: float) -> str | None:
        """The next line, or None at EOF or after ``timeout`` s."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is not None:
            self.seen.append(line)
        return line

    def until(self, pred: Any, timeout: float) -> str | None:
        """The first line satisfying ``pred`` within ``timeout`` s, else None."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            line = self.get(left)
            if line is None:
                return None
            if pred(line):
                return line
        return None

    def drain(self) -> list[str]:
        """Lines read so far and not yet fetched."""
        out: list[str] = []
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                return out
            if line is not None:
                out.append(line)
                self.seen.append(line)


def wait_json(p: subprocess.Popen[str], path: Path, timeout: float) -> dict[str, Any]:
    """Wait for child ``p`` (bounded), then load the JSON report it wrote to ``path``."""
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        stop(p, signal.SIGKILL)
        raise AssertionError(f"{p.args!r} did not finish within {timeout} s") from None
    if not path.exists():
        err = p.stderr.read() if p.stderr else ""
        raise AssertionError(f"{p.args!r} wrote no report (rc {p.returncode}): {err[-2000:]}")
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def spawn_execs(dirpath: Path, comm: str, count: int, rate: float) -> subprocess.Popen[str]:
    """A child that execs ``count`` short processes named ``comm`` at ``rate``/s and
    writes their pids to ``dirpath/<comm>.json``."""
    return child("gen", str(dirpath), comm, str(count), str(rate))


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the comm (state, ppid, ...), or None."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def children_of(ppid: int, argv: list[str] | None = None) -> list[int]:
    """Pids of the processes whose parent is ``ppid`` (and whose command line is
    ``argv``, when given)."""
    out = []
    for d in Path("/proc").iterdir():
        fields = _stat_fields(int(d.name)) if d.name.isdigit() else None
        if fields is None or int(fields[1]) != ppid:
            continue
        if argv is not None:
            try:
                cmdline = (d / "cmdline").read_bytes().split(b"\0")[:-1]
            except OSError:
                continue
            if [a.decode(errors="replace") for a in cmdline] != argv:
                continue
        out.append(int(d.name))
    return out


def running(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def gone_within(pid: int, timeout: float) -> bool:
    """Waits up to ``timeout`` s for ``pid`` to end (or be a zombie); whether it did."""
    deadline = time.monotonic() + timeout
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not running(pid)
