"""``ringtool trace --flight-recorder SIZE -i IFACE --pcap FILE`` for real, on a veth
pair: the net source's perf rings are write_backward rings, nothing is written while
tracing, SIGUSR1 writes the packets the kernel kept to the pcapng file (and the JSON
lines), the end of the run the rest, the newest kept when more than SIZE came, and no
packet twice. The file is read back with the project's pcapng reader and with tshark."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from ringtool.trace.writers.pcapng import read_pcapng
from tests.helpers.cpus import pinned
from tests.helpers.trace import Trace, told_json

pytestmark = pytest.mark.kernel
SNAPLEN = 64
BASE = 41000  # frame i has UDP source port BASE + i
START = 240  # BCC compiles the net source before the start line (slow under TCG)


def udp4(i: int) -> bytes:
    payload = b"flight%05d" % i
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), i & 0xFFFF, 0, 64, 17, 0,
                     bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2]))  # fmt: skip
    udp = struct.pack("!HHHH", BASE + i, 5000, 8 + len(payload), 0)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp + payload


def one_cpu() -> AbstractContextManager[None]:
    """This process on one CPU meanwhile: its packets' egress hook runs there, so one
    per-CPU ring holds them all (which ones are the newest is then well defined)."""
    return pinned({min(os.sched_getaffinity(0))})


def send(iface: str, numbers: range) -> None:
    with one_cpu(), socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((iface, 0))
        for i in numbers:
            s.send(udp4(i))


def in_pcap(path: Path) -> list[int]:
    """The frame numbers of our packets in the pcapng file, in file order."""
    out = []
    for p in read_pcapng(path.read_bytes()):
        (sport,) = struct.unpack_from("!H", p.data, 34)
        if p.data[12:14] == b"\x08\x00" and sport >= BASE:
            out.append(sport - BASE)
    return out


def in_json(lines: list[str]) -> list[int]:
    objs = [json.loads(line) for line in lines]
    return [o["sport"] - BASE for o in objs if o["type"] == "net" and o["sport"] >= BASE]


def trace(veth: str, pcap: Path, size: str) -> Trace:
    return Trace("--json", "--stats", "--events", "net", "-i", veth, "--snaplen", str(SNAPLEN),
                 "--pcap", str(pcap), "--flight-recorder", size,
                 start_timeout=START)  # fmt: skip


def wait_for(tr: Trace, n: int) -> list[int]:
    deadline = time.monotonic() + 60
    while n not in in_json(list(tr.lines)):
        assert tr.proc.poll() is None, tr.err
        assert time.monotonic() < deadline, f"packet {n} not written: {tr.err}"
        time.sleep(0.05)
    return in_json(list(tr.lines))


def a_tick_went_by(tr: Trace) -> None:
    n = len([m for m in told_json(tr.err) if m.get("type") == "stats"])
    deadline = time.monotonic() + 60
    while len([m for m in told_json(tr.err) if m.get("type") == "stats"]) <= n:
        assert time.monotonic() < deadline, tr.err
        time.sleep(0.05)


def test_sigusr1_dumps_packets_to_pcapng_then_the_exit_dumps_the_rest(
    veth: str, tmp_path: Path
) -> None:
    pcap = tmp_path / "fr.pcapng"
    tr = trace(veth, pcap, "64K")
    try:
        send(veth, range(5))
        a_tick_went_by(tr)
        assert in_json(list(tr.lines)) == [] and in_pcap(pcap) == []  # nothing read yet
        tr.signal(signal.SIGUSR1)
        assert wait_for(tr, 4) == [0, 1, 2, 3, 4]
        assert in_pcap(pcap) == [0, 1, 2, 3, 4]  # on disk at the dump, not at the end
        send(veth, range(5, 8))
    finally:
        tr.signal(signal.SIGINT)
    lines, err = tr.finish()
    assert in_json(lines) == list(range(8))  # each once, oldest first
    assert in_pcap(pcap) == list(range(8))
    assert "flight recorder: 64 KiB a CPU" in err and "net: perf write_backward" in err
    packets = read_pcapng(pcap.read_bytes())
    assert all(p.ifname == veth and p.inbound is False for p in packets)
    assert [p.ts_ns for p in packets] == sorted(p.ts_ns for p in packets)
    if shutil.which("tshark"):
        res = subprocess.run(["tshark", "-r", str(pcap), "-T", "fields", "-e", "udp.srcport"],
                             capture_output=True, text=True, timeout=120)  # fmt: skip
        assert res.returncode == 0, res.stderr
        assert [int(x) - BASE for x in res.stdout.split() if int(x) >= BASE] == list(range(8))


def test_the_newest_packets_are_kept_when_more_than_size_came(veth: str, tmp_path: Path) -> None:
    pcap = tmp_path / "fr.pcapng"
    tr = trace(veth, pcap, "4K")
    try:
        send(veth, range(200))  # ~150 bytes a sample: far more than 4 KiB
        tr.signal(signal.SIGUSR1)
        got = wait_for(tr, 199)
    finally:
        tr.signal(signal.SIGINT)
    lines, _ = tr.finish()
    assert 0 not in got and 0 < len(got) < 200
    assert got == list(range(200 - len(got), 200))  # the newest, contiguous, in order
    assert in_json(lines) == got and in_pcap(pcap) == got  # the exit added none twice
