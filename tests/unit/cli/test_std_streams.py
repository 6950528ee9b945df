"""stdout and stderr write whole under ``PYTHONUNBUFFERED=1`` (:mod:`ringtool.cli.std_streams`):
a write to a full pipe that a signal interrupts (the trace's Ctrl-C while its reader is
behind) goes on until everything is written. Each child blocks in write(2) on a pipe
nobody reads yet, is signalled there (a handler that returns, like the trace's), and
then read: every byte must arrive, in order."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ringtool.cli.std_streams import whole
from tests.helpers.paths import ROOT

#: The child: blocks writing N bytes to stdout or stderr; a thread waits until the
#: main thread is in write(2) (/proc's syscall number 1 on x86-64, see proc(5)), signals
#: it there, and says so on the other stream.
_CHILD = r"""
import os, signal, sys, threading, time
name, n = sys.argv[1], int(sys.argv[2])
if sys.argv[3] == "whole":
    from ringtool.cli.std_streams import whole_writes
    whole_writes()
out, other = (sys.stdout, sys.stderr) if name == "stdout" else (sys.stderr, sys.stdout)
signal.signal(signal.SIGUSR1, lambda *a: None)
main, tid = threading.get_ident(), threading.get_native_id()
def poke():
    path = f"/proc/self/task/{tid}/syscall"
    while not open(path).read().startswith("1 "):
        time.sleep(0.01)
    time.sleep(0.1)
    signal.pthread_kill(main, signal.SIGUSR1)
    os.write(other.fileno(), b"poked\n")
threading.Thread(target=poke, daemon=True).start()
text = "".join(f"{i:07d}\n" for i in range(n // 8))
out.write(text)
out.flush()
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="write(2) is syscall 1 on x86-64")
@pytest.mark.parametrize("name", ["stdout", "stderr"])
def test_an_interrupted_write_still_writes_everything(name: str) -> None:
    n = 1 << 20  # 16 pipes' worth: the write blocks, is interrupted, and goes on
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, name, str(n), "whole"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)  # fmt: skip
    data, poked = (proc.stdout, proc.stderr) if name == "stdout" else (proc.stderr, proc.stdout)
    assert data is not None and poked is not None
    assert poked.readline() == b"poked\n"  # interrupted in write(2); nothing read yet
    got = data.read()
    assert proc.wait(timeout=60) == 0
    want = "".join(f"{i:07d}\n" for i in range(n // 8)).encode()
    assert len(got) == len(want)
    assert got == want


def test_buffered_streams_are_left_alone() -> None:
    import io

    buffered = io.TextIOWrapper(io.BufferedWriter(io.FileIO(os.devnull, "w")))
    assert whole(buffered) is buffered
    text = io.StringIO()
    assert whole(text) is text
    buffered.close()
