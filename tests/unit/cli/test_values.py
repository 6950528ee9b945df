"""Every bad flag value of every subcommand is one line on stderr naming the flag, exit
status 2, no traceback, and nothing loaded: the real CLI, run as a subprocess.

A value that slips through would start tracing (as root): the timeout turns that into
a failure instead of a hang."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.helpers.paths import RINGTOOL, ROOT

Arg = str | bytes
LONG_SOCKET = "/tmp/" + "s" * 200

# (argv, the flag the message must name)
BAD: list[tuple[list[Arg], str]] = [
    # trace: numbers (nan, inf, negative, zero, huge, not a number)
    (["trace", "-d", "nan"], "--duration"),
    (["trace", "-d", "inf"], "--duration"),
    (["trace", "-d", "1e400"], "--duration"),
    (["trace", "-d", "-1"], "--duration"),
    (["trace", "-d", "0"], "--duration"),
    (["trace", "-d", "ten"], "--duration"),
    (["trace", "-d", "1e12"], "--duration"),  # beyond what a wait can take
    (["trace", "--export-drain", "1e12"], "--export-drain"),  # overflowed at the end
    (["trace", "--export-drain", str(2**64)], "--export-drain"),
    (["trace", "-p", "-5"], "--pid"),
    (["trace", "-p", "0"], "--pid"),
    (["trace", "-p", "99999999999999999999"], "--pid"),
    (["trace", "-p", "1.5"], "--pid"),
    (["trace", "--snaplen", "-1"], "--snaplen"),
    (["trace", "--snaplen", "70000"], "--snaplen"),
    (["trace", "--buffer-pages", "3"], "--buffer-pages"),
    (["trace", "--buffer-pages", "0"], "--buffer-pages"),
    (["trace", "--buffer-pages", "-4"], "--buffer-pages"),
    (["trace", "--buffer-pages", str(1 << 40)], "--buffer-pages"),
    (["trace", "--buffer-pages", "x"], "--buffer-pages"),
    (["trace", "--max-buffer-mb", "0"], "--max-buffer-mb"),
    (["trace", "--max-buffer-mb", "-8"], "--max-buffer-mb"),
    (["trace", "--max-buffer-mb", "nan"], "--max-buffer-mb"),
    (["trace", "--max-buffer-mb", "lots"], "--max-buffer-mb"),
    (["trace", "--max-buffer-mb", "1e12"], "--max-buffer-mb"),  # more than the memory
    (["trace", "--max-buffer-mb", "0.25"], "--max-buffer-mb 0.25 is less than the rings"),
    (["trace", "--max-buffer-mb", "64", "--buffer-pages", str(1 << 18)], "--max-buffer-mb"),
    (["trace", "--max-buffer-mb", "64", "--no-grow"], "--max-buffer-mb"),
    (["trace", "--max-buffer-mb", "64", "--events", "net", "-i", "lo"], "--max-buffer-mb"),
    (["trace", "--interval", "0"], "--interval"),
    # trace: an interface that does not exist (checked before anything loads)
    (["trace", "-i", "rt-no-such-if"], "-i rt-no-such-if"),
    (["trace", "--events", "exec,net", "-i", "rt-no-such-if"], "-i rt-no-such-if"),
    (["trace", "--interval", "nan"], "--interval"),
    (["trace", "--interval", "-1"], "--interval"),
    (["trace", "--interval", "1e9"], "--interval"),
    (["trace", "--slow-ms", "nan"], "--slow-ms"),
    (["trace", "--slow-ms", "inf"], "--slow-ms"),
    (["trace", "--slow-ms", "0"], "--slow-ms"),
    (["trace", "--slow-ms", "-3"], "--slow-ms"),
    (["trace", "--slow-ms", "1e300"], "--slow-ms"),
    (["trace", "--ordered", "--window-us", "-5"], "--window-us"),
    (["trace", "--ordered", "--window-us", "nan"], "--window-us"),
    (["trace", "--ordered", "--window-us", "1e300"], "--window-us"),
    (["trace", "--window-us", "5"], "--window-us"),  # needs --ordered
    # trace: strings (empty, too long for the kernel, not UTF-8, not a name)
    (["trace", "-c", ""], "--comm"),
    (["trace", "-c", "averyveryverylongname"], "--comm"),
    (["trace", "-c", "é" * 8], "--comm"),  # 16 bytes
    ([b"trace", b"-c", b"\xff\xfe"], "--comm"),
    (["trace", "--events", ""], "--events"),
    (["trace", "--events", "exec,bogus"], "--events"),
    ([b"trace", b"--events", b"\xff"], "--events"),
    (["trace", "-i", ""], "--iface"),
    (["trace", "-i", "a/b"], "--iface"),
    (["trace", "-i", "x" * 16], "--iface"),
    ([b"trace", b"-i", b"\xff"], "--iface"),
    (["trace", "--kmes", ""], "--kmes"),
    (["trace", "--kmes", LONG_SOCKET], "--kmes"),
    # trace: paths
    (["trace", "-i", "lo", "--pcap", "/nonexistent-dir/x.pcapng"], "--pcap"),
    (["trace", "-i", "lo", "--pcap", "/tmp"], "--pcap"),
    (["trace", "-i", "lo", "--pcap", ""], "--pcap"),
    ([b"trace", b"-i", b"lo", b"--pcap", b"/nonexistent-\xff/x"], "--pcap"),
    (["trace", "--pcap", "/tmp/x.pcapng"], "--pcap"),  # no net source
    # trace: outputs
    (["trace", "--fields", "pid,bogus"], "--fields"),
    (["trace", "--fields", ""], "--fields"),
    (["trace", "--fields", ",,"], "--fields"),
    (["trace", "--fields", "payload"], "--fields"),  # private net keys are not fields
    ([b"trace", b"--fields", b"pid,\xff"], "--fields"),
    (["trace", "--fields", "pid", "--quiet"], "--fields"),
    (["trace", "--csv", "--json"], "--csv"),
    (["trace", "--csv", "--no-tui"], "--csv"),
    (["trace", "--no-such-flag"], "--no-such-flag"),
    # trace: -t, -u, -n, --cgroup, -x
    (["trace", "-t", "0"], "--tid"),
    (["trace", "-t", "x"], "--tid"),
    (["trace", "-t", "99999999999"], "--tid"),
    (["trace", "-u", "-1"], "--uid"),
    (["trace", "-u", "4294967295"], "--uid"),  # (uid_t)-1: no uid
    (["trace", "-u", "no-such-user-rtc"], "--uid"),
    (["trace", "-u", ""], "--uid"),
    ([b"trace", b"-u", b"\xff"], "--uid"),
    (["trace", "-n", "("], "--name"),
    (["trace", "-n", "[a-"], "--name"),
    (["trace", "--cgroup", ""], "--cgroup"),
    (["trace", "--cgroup", "/nonexistent-cgroup"], "--cgroup"),
    (["trace", "--cgroup", "/etc/hostname"], "--cgroup"),  # not a directory
    (["trace", "--cgroup", "/tmp"], "--cgroup"),  # not on cgroup2
    (["trace", "-x", "--events", "syscalls"], "--failed"),  # no open or exec source
    # bridge
    (["bridge", "--duration", "-1"], "--duration"),
    (["bridge", "--duration", "nan"], "--duration"),
    (["bridge", "--duration", "inf"], "--duration"),
    (["bridge", "--duration", "1e12"], "--duration"),
    (["bridge", "--export-drain", "1e12"], "--export-drain"),
    (["bridge", "--ring-pages", "3"], "--ring-pages"),
    (["bridge", "--ring-pages", "0"], "--ring-pages"),
    (["bridge", "--ring-pages", "-8"], "--ring-pages"),
    (["bridge", "--perf-pages", "0"], "--perf-pages"),
    (["bridge", "--perf-pages", "6"], "--perf-pages"),
    (["bridge", "--perf-pages", "1e3"], "--perf-pages"),
    (["bridge", "--capacity", "3"], "--capacity"),
    (["bridge", "--capacity", ""], "--capacity"),
    (["bridge", "--capacity", "64G"], "--capacity"),
    (["bridge", "--capacity", "lots"], "--capacity"),
    (["bridge", "--events", "exec,nope"], "--events"),
    (["bridge", "--events", ""], "--events"),
    (["bridge", "--socket", ""], "--socket"),
    (["bridge", "--socket", LONG_SOCKET], "--socket"),
    (["bridge", "--config", "/tmp"], "--config"),
    (["bridge", "--config", ""], "--config"),
    # collect: numbers
    (["collect", "nats://127.0.0.1:4222", "-d", "1e12"], "--duration"),
    (["collect", "nats://127.0.0.1:4222", "--interval", "1e12"], "--interval"),
    (["collect", "nats://127.0.0.1:4222", "--window-ms", "1e300"], "--window-ms"),
    # kmes-read, bench, doctor
    (["kmes-read", "--socket", ""], "--socket"),
    (["kmes-read", "--socket", LONG_SOCKET], "--socket"),
    (["bench", "ringbuf", "--repeats", "0"], "--repeats"),
    (["bench", "ringbuf", "--repeats", "-1"], "--repeats"),
    (["bench", "ringbuf", "--repeats", "1000000"], "--repeats"),
    (["bench", "nosuch"], "which"),
    (["doctor", "--verbose"], "--verbose"),
    (["nosuch"], "COMMAND"),
]


def _id(case: tuple[list[Arg], str]) -> str:
    return " ".join(os.fsdecode(a) for a in case[0]).encode("ascii", "backslashreplace").decode()


@pytest.mark.parametrize(("argv", "flag"), BAD, ids=[_id(c) for c in BAD])
def test_bad_value_is_one_line_exit_2(argv: list[Arg], flag: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "RINGTOOL_DEBUG"}
    cmd: list[Arg] = [*RINGTOOL, *argv]
    res = subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=60, env=env, check=False)
    err = res.stderr.decode("utf-8", "backslashreplace")
    assert res.returncode == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert flag in lines[0], err
    assert lines[0].startswith("ringtool"), err
    assert res.stdout == b""


def test_version() -> None:
    res = subprocess.run(
        [*RINGTOOL, "--version"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    from ringtool import __version__

    assert res.stdout.strip() == f"ringtool {__version__}"
