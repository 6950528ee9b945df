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
    ``lines`` (a full pipe would stall it: a tracer would drop events)."""

    def __init__(self, argv: list[str], *, stderr: Any = subprocess.PIPE) -> None:
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr,
                                     text=True)  # fmt: skip
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))


class Trace(Lines):
    """``ringtool trace ARGS`` (see :class:`Lines`), started: its start line came."""

    def __init__(self, *args: str) -> None:
        super().__init__([*RINGTOOL, "trace", *args])
        ready = ("--json" in args and '"type": "start"') or "Tracing... Ctrl-C to end."
        deadline = time.monotonic() + 60
        while not any(ready in line for line in list(self.lines)):
            assert self.proc.poll() is None, self.proc.stderr.read()  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "ringtool trace did not start"
            time.sleep(0.05)

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def finish(self, timeout: float = 60) -> tuple[list[str], str]:
        """Wait for the exit (status 0, no traceback); all stdout lines and stderr."""
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=10)
        err = self.proc.stderr.read() if self.proc.stderr else ""
        assert self.proc.returncode == 0, err
        assert "Traceback" not in err, err
        return self.lines, err


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
