"""``ringtool trace --events net -i lo --pcap``: a real TCP exchange on the loopback
device, read back by tshark: every packet once, with its direction, and no TCP analysis
warnings (each packet passes lo's egress and ingress hooks: both copies in the file
made tshark mark half of them as retransmissions and duplicate ACKs)."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from ringtool.trace.pcapng import read_pcapng
from tests.helpers.trace import Trace

pytestmark = [
    pytest.mark.kernel,
    pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed"),
]
ROUNDS = 20


def echo_exchange() -> int:
    """A TCP connection on 127.0.0.1: ROUNDS request/answer pairs, then a clean close.
    Returns the server's port."""
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def serve() -> None:
        conn, _ = srv.accept()
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data.upper())

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        for i in range(ROUNDS):
            msg = b"ringtool %03d\n" % i
            c.sendall(msg)
            got = b""
            while len(got) < len(msg):
                got += c.recv(65536)
            assert got == msg.upper()
    t.join(10)
    srv.close()
    return port


def tshark(path: Path, *args: str) -> str:
    res = subprocess.run(
        ["tshark", "-r", str(path), *args], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_loopback_tcp_capture_reads_clean_in_tshark(tmp_path: Path) -> None:
    pcap = tmp_path / "lo.pcapng"
    proc = Trace("--json", "--events", "net", "-i", "lo", "--snaplen", "256", "--pcap", str(pcap))
    port = echo_exchange()
    proc.signal(signal.SIGINT)
    lines, _ = proc.finish()
    objs = [json.loads(line) for line in lines]
    nets = [o for o in objs if o["type"] == "net" and port in (o["sport"], o["dport"])]
    flt = f"tcp.port == {port}"
    rows = tshark(pcap, "-Y", flt, "-T", "fields", "-e", "frame.packet_flags_direction")
    directions = rows.split()
    # SYN, SYN-ACK, ACK, 2 data segments + ACKs per round (some ACKs may be delayed and
    # ride along), FIN/ACK: many packets, each once, each inbound (lo's ingress copy)
    assert len(directions) >= 2 * ROUNDS + 3
    assert set(directions) == {"0x00000001"}
    # the JSON shows both hooks' events: every packet in the file was seen twice
    assert sorted(n["dir"] for n in nets) == ["egress"] * len(directions) + ["ingress"] * len(
        directions
    )
    assert tshark(pcap, "-Y", f"{flt} && tcp.analysis.retransmission") == ""
    assert tshark(pcap, "-Y", f"{flt} && tcp.analysis.flags") == ""
    assert all(p.inbound is True for p in read_pcapng(pcap.read_bytes()) if p.ifname == "lo")
