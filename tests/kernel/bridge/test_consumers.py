"""A real ``ringtool bridge``'s stderr: one line per consumer process attaching and
exiting (pid from SO_PEERCRED, its name escaped), the periodic rate line counting real
exec/exit events, and ``--quiet`` silencing both."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.helpers.kmes import start_bridge
from tests.helpers.paths import PY, ROOT
from tests.helpers.procs import stop

pytestmark = pytest.mark.kernel

# A consumer that names itself (comm with an escape sequence), attaches through the real
# protocol, says so and stays until stdin closes.
CONSUMER = """
import ctypes, sys
from ringtool.kmes.attach import attach
ctypes.CDLL(None).prctl(15, b"rd\\x1b[31mred", 0, 0, 0)
readers = attach(sys.argv[1])
print("attached", flush=True)
sys.stdin.read()
"""
RATE = re.compile(r"ringtool bridge: ([\d,]+) events in [\d.]+ s \([\d.,]+/s\), ([\d,]+) lost")


def consumer(sock: Path) -> subprocess.Popen[str]:
    p = subprocess.Popen(
        [PY, "-c", CONSUMER, str(sock)], cwd=ROOT,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert p.stdout is not None
    assert p.stdout.readline() == "attached\n"
    return p


def test_attach_detach_and_rate_lines(tmp_path: Path) -> None:
    sock = tmp_path / "kmes.sock"
    b = start_bridge(sock, "--stats-interval", "0.5")
    bridge, err = b.proc, b.err
    reader = None
    try:
        reader = consumer(sock)
        line = err.until(lambda s: "consumer attached" in s, 30)
        assert line == (
            f"ringtool bridge: consumer attached: pid {reader.pid} (rd\\x1b[31mred), uid 0\n"
        )
        assert reader.stdin is not None
        reader.stdin.close()  # it exits
        reader.wait(30)
        line = err.until(lambda s: "consumer detached" in s, 30)
        assert line is not None, "".join(err.seen)
        assert line.startswith(
            f"ringtool bridge: consumer detached: pid {reader.pid} (rd\\x1b[31mred) exited after"
        ), line
        # 20 processes: 20 execs + 20 exits at least, all counted by the rate lines.
        for _ in range(20):
            subprocess.run(["/bin/true"], check=True)
        total = 0

        def counted(s: str) -> bool:
            nonlocal total
            m = RATE.match(s)
            if m:
                total += int(m.group(1).replace(",", ""))
            return total >= 40

        assert err.until(counted, 30) is not None, "".join(err.seen)
    finally:
        stop(reader)
        stop(bridge, signal.SIGINT)
    text = "".join(err.seen) + "".join(err.drain())
    assert bridge.returncode == 0, text
    assert "\x1b" not in text  # the consumer's name never reaches a terminal raw


def test_quiet_has_no_attach_or_rate_lines(tmp_path: Path) -> None:
    sock = tmp_path / "kmes.sock"
    b = start_bridge(sock, "--quiet", "--stats-interval", "0.1", "-d", "3")
    bridge, err = b.proc, b.err
    try:
        reader = consumer(sock)
        assert reader.stdin is not None
        reader.stdin.close()
        reader.wait(30)
        for _ in range(5):
            subprocess.run(["/bin/true"], check=True)
        bridge.wait(60)  # -d 3: it stops by itself, after several 0.1 s intervals
    finally:
        stop(bridge, signal.SIGKILL)
    while err.get(5.0) is not None:
        pass
    assert bridge.returncode == 0, "".join(err.seen)
    lines = err.seen
    assert lines[0].startswith("ringtool bridge: serving "), lines
    assert all(re.match(r"cpu \d+: \d+ events written", s) for s in lines[1:]), lines
