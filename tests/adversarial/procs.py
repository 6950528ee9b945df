"""Process plumbing for the adversarial tests: a real ``ringtool bridge``, child helper
processes (``python -m tests.adversarial.<name>``), bounded waits, sure cleanup.

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
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
RINGTOOL = [PY, "-m", "ringtool.cli.main"]
START_TIMEOUT = 60.0  # BCC compiles the program at start: slow only on a loaded machine


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


class Bridge:
    """A ``ringtool bridge`` process serving ``sock`` with config file ``conf``."""

    def __init__(self, sock: Path, conf: Path, events: str = "exec,exit") -> None:
        self.sock = sock
        self.conf = conf
        self.proc = subprocess.Popen(
            [*RINGTOOL, "bridge", "--socket", str(sock), "--config", str(conf), "--events", events],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.err = LineReader(self.proc.stderr)
        line = self.err.until(lambda s: "serving" in s, START_TIMEOUT)
        if line is None:
            stop(self.proc, signal.SIGKILL)
            raise AssertionError(f"bridge did not start: {''.join(self.err.seen)}")

    def alive(self) -> bool:
        return self.proc.poll() is None

    def resize(self, capacity: int) -> None:
        self.conf.write_text(f"capacity = {capacity}\n")
        self.proc.send_signal(signal.SIGHUP)

    def stderr_text(self) -> str:
        """Everything the bridge wrote to stderr so far (all of it if it has exited)."""
        if self.proc.poll() is not None:
            while self.err.get(5.0) is not None:
                pass
        self.err.drain()
        return "".join(self.err.seen)

    def close(self) -> None:
        stop(self.proc)


@contextlib.contextmanager
def bridge(tmp: Path, capacity: int = 1 << 20, name: str = "kmes.sock") -> Iterator[Bridge]:
    conf = tmp / "kmes.conf"
    conf.write_text(f"capacity = {capacity}\n")
    b = Bridge(tmp / name, conf)
    try:
        yield b
    finally:
        b.close()


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
