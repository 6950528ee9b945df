"""``ringtool trace --events net -i lo --pcap``: a real TCP exchange on the loopback
device, read back by tshark: every packet once, with its direction, in time order, and
no TCP analysis warnings but those of the kernel's own retransmissions (each packet
passes lo's egress and ingress hooks: both copies in the file made tshark mark half of
them as retransmissions and duplicate ACKs).

The client runs on one CPU and the server on another, so each answer is captured on
another CPU than its request: the perf buffers are read one CPU after another, and
before the net samples were put in time order (ringtool.trace.reading.net_order) an answer
could land in the file before its request's ACK, which tshark calls a spurious
retransmission (the emulated 6.1 guest did, about one run in ten). TCP may still
really retransmit on a slow machine; those packets were on the wire and belong in the
file, so tshark's retransmissions are compared with the kernel's count for the
connection (``tcpi_total_retrans`` of both sockets, from ``TCP_INFO``), and a packet
written twice is looked for directly: the same bytes at the same timestamp."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import struct
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from ringtool.trace.writers.pcapng import read_pcapng
from tests.helpers.cpus import pinned
from tests.helpers.trace import Trace

pytestmark = [
    pytest.mark.kernel,
    pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed"),
]
ROUNDS = 20
#: ``struct tcp_info``'s ``tcpi_total_retrans`` (include/uapi/linux/tcp.h: eight u8
#: fields, then u32 fields from tcpi_rto at 8 to tcpi_total_retrans at 100)
TOTAL_RETRANS = struct.Struct("=I")
TOTAL_RETRANS_OFF = 100


def total_retrans(sock: socket.socket) -> int:
    """The segments the kernel has retransmitted on ``sock`` so far."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    return int(TOTAL_RETRANS.unpack_from(info, TOTAL_RETRANS_OFF)[0])


@dataclass(frozen=True)
class Exchange:
    port: int  # the server's
    retransmitted: int  # data segments the kernel resent, both sides


def echo_exchange() -> Exchange:
    """A TCP connection on 127.0.0.1: ROUNDS request/answer pairs, then a clean close.
    Each side's retransmissions (SYN and data; a SYN-ACK's are the accepted socket's)
    are read once all its data is acknowledged (the client after the last answer, the
    server at the client's FIN), so only a FIN can be resent after."""
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    server_retrans: list[int] = []

    def serve() -> None:
        with pinned({1}, required=False):  # the server on another CPU than the client
            conn, _ = srv.accept()
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data.upper())
                server_retrans.append(total_retrans(conn))

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    client = pinned({0}, required=False)
    with client, socket.create_connection(("127.0.0.1", port), timeout=10) as c:
        for i in range(ROUNDS):
            msg = b"ringtool %03d\n" % i
            c.sendall(msg)
            got = b""
            while len(got) < len(msg):
                got += c.recv(65536)
            assert got == msg.upper()
        client_retrans = total_retrans(c)
    t.join(10)
    srv.close()
    assert len(server_retrans) == 1, "the server did not see the client's close"
    return Exchange(port, client_retrans + server_retrans[0])


def tshark(path: Path, *args: str) -> str:
    res = subprocess.run(
        ["tshark", "-r", str(path), *args], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_loopback_tcp_capture_reads_clean_in_tshark(tmp_path: Path) -> None:
    pcap = tmp_path / "lo.pcapng"
    proc = Trace("--json", "--events", "net", "-i", "lo", "--snaplen", "256", "--pcap", str(pcap))
    exchange = echo_exchange()
    port = exchange.port
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
    packets = [p for p in read_pcapng(pcap.read_bytes()) if p.ifname == "lo"]
    assert all(p.inbound is True for p in packets)
    # in time order, across the two CPUs (else tshark sees answers before requests)
    stamps = [p.ts_ns for p in packets]
    assert stamps == sorted(stamps)
    # nothing written twice: no two frames with the same timestamp and bytes
    frames = [(p.ts_ns, p.data) for p in packets]
    assert len(set(frames)) == len(frames)
    # what tshark calls retransmitted is what the kernel resent, segment for segment (a
    # FIN resent after the sockets were read is not in their count)
    resent = tshark(pcap, "-Y", f"{flt} && tcp.analysis.retransmission && tcp.flags.fin == 0")
    assert len(resent.splitlines()) == exchange.retransmitted, resent
    # and nothing else is odd but the duplicate ACKs a resent segment is answered with
    others = "tcp.analysis.flags && !tcp.analysis.retransmission && !tcp.analysis.duplicate_ack"
    assert tshark(pcap, "-Y", f"{flt} && {others}") == ""
    dup_acks = tshark(pcap, "-Y", f"{flt} && tcp.analysis.duplicate_ack")
    assert len(dup_acks.splitlines()) <= exchange.retransmitted, dup_acks
