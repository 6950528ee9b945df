"""Run ``ringtool trace`` as a subprocess for the kernel tests."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RINGTOOL = [sys.executable, "-m", "ringtool.cli.main"]


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


class Trace(Lines):
    """``ringtool trace ARGS`` (see :class:`Lines`), started: its start line came (on
    stderr: stdout carries events only)."""

    def __init__(self, *args: str) -> None:
        super().__init__([*RINGTOOL, "trace", *args])
        ready = ("--json" in args and '"type": "start"') or "Tracing... Ctrl-C to end."
        deadline = time.monotonic() + 60
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
        return self.lines, err


def told_json(err: str) -> list[dict[str, Any]]:
    """The JSON lines (start, stats, note) a ``--json`` trace wrote on stderr."""
    import json

    return [json.loads(line) for line in err.splitlines() if line.startswith("{")]
