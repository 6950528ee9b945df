"""``ringtool trace --events net -i IFACE --pcap``: TC capture over a veth pair."""

from __future__ import annotations

import json
import signal
import socket
import struct
import subprocess
import time
from pathlib import Path

import pytest

from ringtool.trace.writers.pcapng import read_pcapng
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.trace import Trace

pytestmark = pytest.mark.kernel
SNAPLEN = 64


def udp4(i: int, size: int) -> bytes:
    payload = (b"ringtool%04d" % i).ljust(size, b"z")
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 28 + len(payload), i, 0, 64, 17, 0,
                     bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2]))  # fmt: skip
    udp = struct.pack("!HHHH", 4000 + i, 5000, 8 + len(payload), 0)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + udp + payload


def tcp6(i: int) -> bytes:
    tcp = struct.pack("!HHIIBBHHH", 6000 + i, 443, 1, 0, 0x50, 0x02, 1024, 0, 0)
    ip6 = struct.pack("!IHBB16s16s", 0x60000000, len(tcp), 6, 64,
                      bytes.fromhex("fd00" + "00" * 13 + "01"),
                      bytes.fromhex("fd00" + "00" * 13 + "02"))  # fmt: skip
    return b"\x02" * 6 + b"\x04" * 6 + b"\x86\xdd" + ip6 + tcp


def test_net_capture_to_pcapng(veth: str, tmp_path: Path) -> None:
    pcap = tmp_path / "out.pcapng"
    proc = Trace("--json", "--events", "net", "-i", veth, "--snaplen", str(SNAPLEN),
                 "--pcap", str(pcap))  # fmt: skip
    qdiscs = subprocess.run(["tc", "qdisc", "show", "dev", veth], capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert "clsact" in qdiscs
    frames = [udp4(i, 10 + 40 * i) for i in range(6)] + [tcp6(1)]
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
        s.bind((veth, 0))
        for f in frames:
            s.send(f)
    time.sleep(1.0)
    proc.signal(signal.SIGINT)
    lines, _ = proc.finish()
    objs = [json.loads(line) for line in lines]
    nets = [o for o in objs if o["type"] == "net"]
    assert len(nets) == len(frames)
    assert [(n["src"], n["dst"], n["sport"], n["dport"], n["proto"]) for n in nets[:2]] == [
        ("10.9.0.1", "10.9.0.2", 4000, 5000, "udp"), ("10.9.0.1", "10.9.0.2", 4001, 5000, "udp"),
    ]  # fmt: skip
    assert (nets[-1]["src"], nets[-1]["dport"], nets[-1]["proto"]) == ("fd00::1", 443, "tcp")
    assert all(
        n["dir"] == "egress" and n["len"] == len(f) for n, f in zip(nets, frames, strict=True)
    )
    assert objs[-1]["events"] == len(frames) and objs[-1]["lost"] == 0
    packets = read_pcapng(pcap.read_bytes())
    assert [p.data for p in packets] == [f[:SNAPLEN] for f in frames]
    assert [p.orig_len for p in packets] == [len(f) for f in frames]
    assert all(p.ifname == veth and p.comment.startswith("cpu=") for p in packets)
    assert all(p.inbound is False for p in packets)  # sent on veth: egress, epb_flags outbound
    assert abs(packets[0].ts_ns / 1e9 - time.time()) < 60
    fields = ["-T", "fields", "-e", "udp.dstport", "-e", "tcp.dstport"]
    tshark = subprocess.run(
        ["tshark", "-r", str(pcap), *fields], capture_output=True, text=True, timeout=60
    )
    if tshark.returncode == 0:
        assert tshark.stdout.split() == ["5000"] * 6 + ["443"]
    qdiscs = subprocess.run(["tc", "qdisc", "show", "dev", veth], capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert "clsact" not in qdiscs  # detached on exit


def test_missing_interface_is_an_error_before_anything_loads() -> None:
    # as root: a typo in -i is one line and exit 2, not a trace of everything else
    res = subprocess.run(
        [*RINGTOOL, "trace", "--json", "-d", "1", "--events", "exec,net", "-i", "rt-no-such-if"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [
        "ringtool trace: -i rt-no-such-if: no such network interface (`ip link` lists them)"
    ]
    assert res.stdout == ""
