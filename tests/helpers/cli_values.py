"""Running ``ringtool`` with a bad flag value and judging its answer: one line on stderr
naming the flag, exit status 2, no traceback, no hang.

:func:`run_cli` runs the real CLI in a child with a deadline and a memory limit (a
command that reads a device without end fails instead of taking the machine's memory),
optionally as user ``nobody`` (root reads any file: an unreadable file is only honest
for a user). :func:`shared_dir` is a temporary directory that ``nobody`` can enter.
"""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import RINGTOOL, ROOT

#: ``nobody`` without root's groups (as tests/kernel/cli/test_doctor.py runs it).
AS_NOBODY = ("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups")
#: The child's address space at most (Python and numpy need far less).
MEMORY_LIMIT = 2 << 30


@dataclass(frozen=True)
class Answer:
    status: int | None  # None: it did not end within the deadline (killed)
    stderr: str


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_cli(argv: Sequence[str], *, as_nobody: bool = False, timeout: float = 30.0) -> Answer:
    """``ringtool argv...`` from the repository root; its status and stderr."""
    cmd = [*(AS_NOBODY if as_nobody else ()), *RINGTOOL, *argv]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, preexec_fn=_limit_memory)  # fmt: skip
    except subprocess.TimeoutExpired as exc:  # run() killed it
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        return Answer(None, err)
    return Answer(proc.returncode, proc.stderr)


def one_line_usage_error(answer: Answer, command: str, flag: str) -> str:
    """The one line of a usage error of ``ringtool command`` naming ``flag`` (an
    AssertionError saying what was wrong instead)."""
    assert answer.status is not None, f"hung: {answer.stderr[-300:]!r}"
    assert "Traceback" not in answer.stderr, answer.stderr[-2000:]
    lines = answer.stderr.splitlines()
    assert len(lines) == 1, answer.stderr[-2000:]
    assert answer.status == 2, (answer.status, lines[0])
    line = lines[0]
    assert line.startswith(f"ringtool {command}: "), line
    assert flag in line, (flag, line)
    return line


@contextlib.contextmanager
def shared_dir() -> Iterator[Path]:
    """A temporary directory under /tmp that every user may enter (mode 0755), removed
    afterwards (pytest's own temporary directories are root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="ringtool-values-", dir="/tmp"))
    try:
        path.chmod(0o755)
        yield path
    finally:
        for sub in path.rglob("*"):
            with contextlib.suppress(OSError):
                (sub.chmod(0o700) if sub.is_dir() and not sub.is_symlink() else None)
        shutil.rmtree(path, ignore_errors=True)


def fifo(path: Path) -> Path:
    """A FIFO at ``path`` (no writer: opening it to read would block)."""
    os.mkfifo(path)
    return path


__all__ = ["AS_NOBODY", "Answer", "fifo", "one_line_usage_error", "run_cli", "shared_dir"]
