"""The dashboard's machine-wide panels in tmux at 120x40 and 80x24, on real traffic: a
local HTTP exchange of a known size shows in the connections panel with its bytes, and
``dd oflag=direct`` writes to a loop device show in the disks panel.

An open connection (its bytes are known at its close only) shows with its owner and
``-`` for its bytes, then, closed, with them. The first test's trace follows a cgroup
of the test's own (``--cgroup``: the server, the client and
dd are in it), so the machine's other connections and disks, which come and go, do not
take the few rows an 80x24 panel has."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.cgroups import fresh_cgroup
from tests.helpers.disk_workload import loop_device
from tests.helpers.http_exchange import fetch, held_open, http_server, in_cgroup
from tests.helpers.tmux import RUN, Terminal, needs_tmux

# host_only: the dashboard's drawing and keys on a terminal, nothing of the kernel's
# version; the tcp and disk sources are tested on every kernel (the all_kernels tests).
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

FIRST_SCREEN = 180.0
#: The body fetched: the client receives it, the headers and the FIN (bytes_received).
BODY = 3_000_000
CLIENT = "rtfetch"


@pytest.fixture
def cgroup() -> Iterator[Path]:
    with fresh_cgroup() as path:
        yield path


def _writer(dev: str, cgroup: Path) -> subprocess.Popen[bytes]:
    """dd writing 64 KiB blocks to ``dev`` with O_DIRECT, again and again until killed."""
    loop = (f"while :; do dd if=/dev/zero of={dev} bs=64k count=32 oflag=direct status=none;"
            " sleep 0.1; done")  # fmt: skip
    return subprocess.Popen(in_cgroup(["sh", "-c", loop], cgroup), start_new_session=True)


def _conn_row(screen: str, port: int) -> str | None:
    """The client's connection: its comm, the server's address and the bytes it got."""
    for line in screen.splitlines():
        if CLIENT in line and f"127.0.0.1:{port}" in line and "3.00M" in line:
            return line
    return None


def _disk_writes(screen: str, name: str) -> str | None:
    """The loop device's row (its IOPS, RD B/S, WR B/S, P99), when it has writes."""
    for line in screen.splitlines():
        words = line.split()
        if name in words:
            cells = words[words.index(name) + 1 :]
            if len(cells) == 4 and cells[0] != "0" and cells[2] != "0":
                return line
    return None


@needs_tmux
@pytest.mark.parametrize("size", [(120, 40), (80, 24)], ids=["120x40", "80x24"])
def test_connections_and_disks_panels(size: tuple[int, int], cgroup: Path, tmp_path: Path) -> None:
    width, height = size
    (tmp_path / "www").mkdir()
    (tmp_path / "www" / "body").write_bytes(b"x" * BODY)
    with loop_device(tmp_path) as dev, http_server(tmp_path / "www", cgroup) as port:
        cmd = (f"{RUN} trace --events tcp,disk --cgroup {cgroup} --interval 0.5;"
               " echo EXITED rc=$?; sleep 60")  # fmt: skip
        term = Terminal(cmd, width, height)
        writer = None
        try:
            term.wait_for("tcp: busiest (o)", "disks", timeout=FIRST_SCREEN)
            assert fetch(f"http://127.0.0.1:{port}/body", CLIENT, cgroup) == BODY
            writer = _writer(dev, cgroup)
            name = os.path.basename(dev)
            screen = term.wait_for(
                match=lambda s: (
                    _conn_row(s, port) is not None and _disk_writes(s, name) is not None
                ),
                timeout=60,
            )
            assert all(len(line) <= width for line in screen.splitlines())
            term.send("o")
            term.wait_for("tcp: newest (o)")
            term.send("q")
            term.wait_for("EXITED rc=0")
        finally:
            if writer is not None:
                os.killpg(writer.pid, signal.SIGKILL)
                writer.wait(10)
            term.close()


def _held_row(screen: str, port: int) -> list[str] | None:
    """The held connection's row (PID COMM LOCAL REMOTE TX RX DUR) as its cells."""
    for line in screen.splitlines():
        if "rthold" in line and f"127.0.0.1:{port}" in line:
            return line.split()
    return None


@needs_tmux
def test_an_open_connection_then_closed(tmp_path: Path) -> None:
    (tmp_path / "www").mkdir()
    with http_server(tmp_path / "www") as port:
        cmd = f"{RUN} trace --events tcp --interval 0.5; echo EXITED rc=$?; sleep 60"
        term = Terminal(cmd, 120, 40)
        try:
            term.wait_for("tcp: busiest (o)", " open", timeout=FIRST_SCREEN)
            term.send("/", "rthold", "Enter")  # the panel shows its connections only
            with held_open(port, "rthold") as pid:
                screen = term.wait_for(
                    match=lambda s: (
                        (row := _held_row(s, port)) is not None and row[-3:-1] == ["-", "-"]
                    ),
                    timeout=60,
                )
                assert _held_row(screen, port)[0] == str(pid)  # type: ignore[index]
            term.wait_for(
                match=lambda s: (row := _held_row(s, port)) is not None and row[-3].isdigit(),
                timeout=60,
            )
            term.send("q")
            term.wait_for("EXITED rc=0")
        finally:
            term.close()
