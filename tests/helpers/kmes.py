"""KMES for the tests: a real ``ringtool bridge`` process (:class:`Bridge`,
:func:`bridge`, :func:`wait_for_socket`), the in-process test bridge of
tests/unit/kmes_proc.py (:func:`start_proc_bridge`), and reading a KMES buffer back
(:func:`payload_for`, :func:`drain_all`, :func:`kmes_read`)."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from ringtool.kmes import layout as L
from ringtool.kmes.reader import Reader
from tests.helpers.paths import PY, RINGTOOL, ROOT
from tests.helpers.procs import START_TIMEOUT, LineReader, stop


def payload_for(seq: int, n: int) -> bytes:
    """``n`` bytes that depend on ``seq``: a payload read back is checked byte for byte."""
    return bytes((seq * 7 + i) & 0xFF for i in range(n))


def drain_all(r: Reader) -> list[L.Event]:
    """Every event ``r`` can read now."""
    out: list[L.Event] = []
    while evs := r.drain():
        out.extend(evs)
    return out


class Bridge:
    """A ``ringtool bridge`` process serving ``sock`` with config file ``conf``."""

    def __init__(self, sock: Path, conf: Path, *flags: str) -> None:
        self.sock = sock
        self.conf = conf
        self.proc = subprocess.Popen(
            [*RINGTOOL, "bridge", "--socket", str(sock), "--config", str(conf), *flags],
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


def start_bridge(sock: Path, *flags: str, capacity: int = 1 << 20) -> Bridge:
    """A started ``ringtool bridge FLAGS`` on ``sock``, its config ``kmes.conf`` beside it."""
    conf = sock.parent / "kmes.conf"
    conf.write_text(f"capacity = {capacity}\n")
    return Bridge(sock, conf, *flags)


@contextlib.contextmanager
def bridge(tmp: Path, capacity: int = 1 << 20, name: str = "kmes.sock") -> Iterator[Bridge]:
    """:func:`start_bridge` for exec and exit events in ``tmp``, closed at the end."""
    b = start_bridge(tmp / name, "--events", "exec,exit", capacity=capacity)
    try:
        yield b
    finally:
        b.close()


def wait_for_socket(path: Path, proc: subprocess.Popen[str], timeout: float = 240) -> None:
    """Until the bridge ``proc`` created its socket ``path`` (it failing fails the test)."""
    end = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"bridge exited: {proc.communicate()[1]}")
        assert time.monotonic() < end, "bridge socket never appeared"
        time.sleep(0.05)


def start_proc_bridge(sock: Path, n: int) -> subprocess.Popen[str]:
    """``kmes_proc bridge``: an in-process KMES bridge serving ``n`` events on ``sock``."""
    p = subprocess.Popen(
        [PY, "-m", "tests.unit.kmes_proc", "bridge", str(sock), str(n)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None
    assert p.stdout.readline() == "serving\n", p.stderr.read() if p.stderr else ""
    return p


def kmes_read(sock: Path | str, *flags: str) -> subprocess.Popen[str]:
    """``ringtool kmes-read --socket SOCK FLAGS`` started, its stdout and stderr piped."""
    return subprocess.Popen(
        [*RINGTOOL, "kmes-read", "--socket", str(sock), *flags],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
