"""``ringtool trace`` outputs that fail: a pcap file that cannot be written, a stdout
whose reader went away (``| head -1``) or that is full. One line or silence, never a
traceback; the sources are detached on the way out."""

from __future__ import annotations

import json
import os
import pwd
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel


def _run(*args: str, stdout: int | None = subprocess.PIPE) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*RINGTOOL, *args], cwd=ROOT, stdout=stdout, stderr=subprocess.PIPE, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def test_pcap_on_a_full_device_is_a_usage_error() -> None:
    res = _run("trace", "-i", "lo", "--pcap", "/dev/full", "--force", "-d", "30")
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == ["ringtool trace: --pcap /dev/full: No space left on device"]


def test_pcap_into_an_existing_file_needs_force(tmp_path: Path) -> None:
    planted = tmp_path / "c.pcapng"
    planted.write_bytes(b"planted")
    planted.chmod(0o666)
    res = _run("trace", "-i", "lo", "--pcap", str(planted), "-d", "30")
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [
        f"ringtool trace: --pcap {planted}: exists: add --force to overwrite it"
    ]
    assert planted.read_bytes() == b"planted"


def test_pcap_through_a_symlink_is_refused_even_with_force(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"root only")
    secret.chmod(0o600)
    link = tmp_path / "c.pcapng"
    link.symlink_to(secret)
    res = _run("trace", "-i", "lo", "--pcap", str(link), "--force", "-d", "30")
    assert res.returncode == 2, res.stderr
    [line] = res.stderr.splitlines()
    assert line.startswith(f"ringtool trace: --pcap {link}: is a symbolic link")
    assert secret.read_bytes() == b"root only"


def test_pcap_that_cannot_be_created_is_a_usage_error() -> None:
    res = _run("trace", "-i", "lo", "--pcap", "/proc/ringtool.pcapng", "-d", "30")
    assert res.returncode == 2, res.stderr
    [line] = res.stderr.splitlines()
    assert line.startswith("ringtool trace: --pcap /proc/ringtool.pcapng: ")


def test_stdout_closed_by_the_reader_exits_quietly(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [*RINGTOOL, "trace", "--json", "--events", "open", "--interval", "0.2", "-d", "60"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    assert '"type": "start"' in proc.stderr.readline()  # the ready line: on stderr
    target = tmp_path / "f"
    target.write_text("x")
    poking = threading.Event()

    def poke() -> None:  # opens until the trace is gone, so events keep coming
        while not poking.wait(0.01):
            target.open().close()

    poker = threading.Thread(target=poke, daemon=True)
    poker.start()
    try:
        first = json.loads(proc.stdout.readline())
        assert first["type"] == "open"  # stdout: events only
        proc.stdout.close()  # what `head -1` does after its line
        proc.wait(timeout=60)
    finally:
        poking.set()
        poker.join()
    err = proc.stderr.read()
    assert proc.returncode == 141, err
    assert all(line.startswith('{"type": "stats"') for line in err.splitlines()), err


def test_full_stdout_is_one_line() -> None:
    with open("/dev/full", "w") as full:
        res = _run("trace", "--json", "--events", "open", "-d", "5", stdout=full.fileno())
    assert res.returncode == 1, res.stderr
    *told, error = res.stderr.splitlines()  # the error: one line after the JSON told there
    assert error == "ringtool trace: No space left on device"
    assert all(line.startswith('{"type": ') for line in told), told


def test_columns_into_a_pipe_are_whole_lines(tmp_path: Path) -> None:
    import signal

    from tests.helpers.trace import Trace

    target = tmp_path / ("n" * (200 - len(str(tmp_path))))  # the record holds 256 bytes
    target.write_text("x")
    proc = Trace("--no-tui", "--events", "open", "-p", str(os.getpid()))
    deadline = time.monotonic() + 60
    while not any(str(target) in line for line in list(proc.lines)):
        assert time.monotonic() < deadline, proc.lines[-5:]
        target.open().close()
        time.sleep(0.1)
    proc.signal(signal.SIGINT)
    lines, _ = proc.finish()
    line = next(line for line in lines if str(target) in line)
    assert line.split()[-5:-2] == [str(target), "O_RDONLY|O_CLOEXEC", "="] and len(line) > 200
    assert line.endswith(" (openat)")


# nobody opens the file it planted and waits; then reads what came into that inode
_HOLDER = """
import sys
f = open(sys.argv[1], "rb")
f.read()
print("ready", flush=True)
sys.stdin.readline()
print(len(f.read()), flush=True)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a holder as nobody needs root")
def test_pcap_force_gives_a_holder_of_the_old_file_nothing() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as where:  # pytest's tmp_path is 0700
        _held_while_forced(Path(where))


def _held_while_forced(tmp_path: Path) -> None:
    tmp_path.chmod(0o1777)  # like /tmp: nobody plants the file
    planted = tmp_path / "c.pcapng"
    planted.write_bytes(b"planted by nobody")
    planted.chmod(0o666)
    nobody = pwd.getpwnam("nobody")
    os.chown(planted, nobody.pw_uid, nobody.pw_gid)
    old_inode = planted.stat().st_ino
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(planted)], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, text=True, user=nobody.pw_uid, group=nobody.pw_gid,
        extra_groups=[],
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "ready\n"
        trace = Trace("--json", "-i", "lo", "--pcap", str(planted), "--force")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for _ in range(6):
                s.sendto(b"secret payload", ("127.0.0.1", 9))
        trace.signal(signal.SIGINT)
        trace.finish()
        out, _ = holder.communicate("go\n", timeout=30)
    finally:
        holder.kill()
        holder.wait(10)
    assert out == "0\n"  # the held (old) inode got no byte of the capture
    st = planted.stat()
    assert st.st_ino != old_inode
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o600)
    data = planted.read_bytes()
    assert data[:4] == b"\x0a\x0d\x0d\x0a" and b"secret payload" in data
    assert [p.name for p in tmp_path.iterdir()] == ["c.pcapng"]  # no temporary file left
