"""The dashboard's per-process network and disk columns and drill-down, in tmux at
120x40 and 80x24: ``ringtool trace --events tcp,disk`` while a local HTTP server
(tests/helpers/http_workload.py) serves a 200,000-byte body to a client every 0.3 s
and ``dd`` (run as a name of its own) writes 8 KiB with O_DIRECT to a loop device
every 0.5 s. The server's and the client's rows show NET TX/RX, dd's DISK R/W; the
columns sort (dd last by NET, first by DISK, first again inverted); the server's
drill-down lists its connections with the bytes it sent."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.disk_workload import loop_device
from tests.helpers.http_workload import HttpExchange
from tests.helpers.tmux import RUN, Terminal, needs_tmux

# host_only: the dashboard's drawing and keys on a terminal (the maps and rings it
# reads are tested on every kernel: test_tcp_live, test_tcp_source, test_disk_source)
pytestmark = [pytest.mark.kernel, pytest.mark.host_only]

FIRST_SCREEN = 180.0
BODY = 200_000
# a NET or DISK cell with bytes: "12.3k/800"
CELL = r"[\d.]+[kMG]?/[\d.]+[kMG]?"


@pytest.fixture
def tag() -> str:
    return "rtio" + secrets.token_hex(4)  # 12 bytes, and a suffix: within the comm


@pytest.fixture
def dd_writer(tmp_path: Path, tag: str) -> Iterator[Path]:
    """A loop device, and dd named ``TAG + "d"`` (a symlink: the comm is the name it
    was executed by) ready to write it (the command line is the caller's)."""
    dd = shutil.which("dd")
    assert dd is not None
    link = tmp_path / f"{tag}d"
    os.symlink(dd, link)
    with loop_device(tmp_path) as dev:
        (tmp_path / "dev").write_text(dev)
        yield link


def _start_dd(link: Path, dev: str) -> subprocess.Popen[bytes]:
    """8 KiB every 0.5 s, each one O_DIRECT write of its own (16 minutes of it)."""
    feed = (f"while true; do head -c 8192 /dev/zero; sleep 0.5; done | {link} of={dev} bs=8k "
            "iflag=fullblock oflag=direct status=none")  # fmt: skip
    return subprocess.Popen(["sh", "-c", feed], start_new_session=True)


# a process table row: PID COMM EVENTS (the recent events have the type after the comm)
ROW = r"\d+\s+{}\s+[\d.]+[kMG]?\s"


def _row(screen: str, comm: str) -> str | None:
    return next((ln for ln in screen.splitlines() if re.search(ROW.format(comm), ln)), None)


def _order(screen: str, tag: str) -> list[str]:
    """The suffixes (s, c, d) of the tagged processes' rows, top down."""
    pattern = ROW.format(f"{tag}([scd])")
    return [m[1] for ln in screen.splitlines() if (m := re.search(pattern, ln))]


def _cells(screen: str, comm: str) -> list[str]:
    row = _row(screen, comm)
    return re.findall(CELL, row) if row else []


@needs_tmux
@pytest.mark.parametrize(("width", "height"), [(120, 40), (80, 24)])
def test_net_and_disk_per_process_sort_and_drill_down(
    dd_writer: Path, tmp_path: Path, tag: str, width: int, height: int
) -> None:
    cmd = f"{RUN} trace --events tcp,disk --interval 1; echo EXITED rc=$?; sleep 60"
    term = Terminal(cmd, width, height)
    http = dd = None
    try:
        term.wait_for("top processes", "NET TX/RX", "DISK R/W", timeout=FIRST_SCREEN)
        http = HttpExchange(f"{tag}s", f"{tag}c", BODY, 0.3)
        dd = _start_dd(dd_writer, (tmp_path / "dev").read_text())
        term.send("/", tag, "Enter")  # only them
        server, client, writer = f"{tag}s", f"{tag}c", f"{tag}d"

        def flowing(screen: str) -> bool:  # bytes in the last interval: not 0/0
            sent, got = _cells(screen, server)[:1], _cells(screen, client)[:1]
            wrote = _cells(screen, writer)[-1:]
            return (sent != [] and not sent[0].startswith("0/") and got != []
                    and not got[0].endswith("/0") and wrote != []
                    and wrote[0].startswith("0/") and wrote[0] != "0/0")  # fmt: skip

        screen = term.wait_for(server, client, writer, match=flowing)
        assert _cells(screen, writer)[-1] != "-"
        # NET TX/RX, biggest first: dd (no traffic) last; DISK R/W: dd first; inverted: last
        while "NET TX/RX▼" not in (screen := term.screen()):
            term.send(">")
            term.wait_for(match=lambda s: s != screen, timeout=30)
        screen = term.wait_for(match=lambda s: "NET TX/RX▼" in s and len(_order(s, tag)) == 3)
        assert _order(screen, tag)[-1] == "d", screen
        term.send(">")
        screen = term.wait_for(match=lambda s: "DISK R/W▼" in s and len(_order(s, tag)) == 3)
        assert _order(screen, tag)[0] == "d", screen
        term.send("I")
        screen = term.wait_for(match=lambda s: "DISK R/W▲" in s and len(_order(s, tag)) == 3)
        assert _order(screen, tag)[-1] == "d", screen
        # the server's drill-down: its connections, each with the body it sent
        term.send("F3", server, "Enter", "Enter")

        def served(screen: str) -> bool:  # a closed one: the body and the headers sent
            return any(re.search(r"127\.0\.0\.1:\d+\s+\d+\s+(20\d(\.\d)?k)\s", ln)
                       for ln in screen.splitlines())  # fmt: skip

        screen = term.wait_for("connections:", f"{server}  (Esc returns)", match=served)
        term.send("Escape")  # alone: ESC and q at once would be Alt+q
        term.wait_for("sources", absent=("(Esc returns)",))
        term.send("q")
        term.wait_for("EXITED rc=0")
    finally:
        for proc in (dd,):
            if proc is not None:
                os.killpg(proc.pid, 9)
                proc.wait(10)
        if http is not None:
            http.stop()
        term.close()
