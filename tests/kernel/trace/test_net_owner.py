"""Packets that name their TCP connection's process: ``ringtool trace --events net,tcp
-i lo`` over a real exchange between a client process and a server process
(tests/helpers/owner_workload.py), over 127.0.0.1 and ::1 (docs/trace.md, "Packets and
their processes").

Over loopback each packet passes lo's egress hook (its sender's end) and then its
ingress hook (its receiver's end): each copy must name the process of its own end,
with its pid, tid, comm and uid (the server runs as nobody). An accepted connection
is named from its owner's first send or receive on it on: the client's first message
may reach the server before that (its ingress copy is not looked at); every later
data packet is named in both copies. A connection opened before the trace, and a
UDP datagram, name no process (pid 0, ``[net]``), and no packet names the wrong one.
"""

from __future__ import annotations

import json
import secrets
import signal
from pathlib import Path
from typing import Any

import pytest

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.programs.tp_presence import has_events
from ringtool.programs.tracepoints import TRACEFS_DIRS
from ringtool.trace.reading.session import TraceOptions, TraceSession
from tests.helpers.owner_workload import MESSAGES, OLD_SIZE, SERVER_UID, UDP_SIZE
from tests.helpers.owner_workload import __file__ as OWNER_SCRIPT
from tests.helpers.tcp_workload import Workload
from tests.helpers.trace import Trace

pytestmark = [pytest.mark.kernel, pytest.mark.all_kernels]

#: An accepted end is named from its first send or receive where the kernel has these
#: tracepoints (Linux 6.3 on); elsewhere only from its close or shutdown, after every
#: message of the workload: its packets before then are nobody's.
LIVE = has_events("sock", ("sock_send_length", "sock_recv_length"), TRACEFS_DIRS)

Event = dict[str, Any]
HOST = {4: "127.0.0.1", 6: "::1"}
#: a data packet's length on lo beyond its payload: Ethernet, IP (20 or 40 bytes), TCP
#: with its options
HEADERS = range(54, 120)


def sized(packets: list[Event], payload: int) -> list[Event]:
    """The packets of ``packets`` that carry ``payload`` bytes (by their length)."""
    return [p for p in packets if p["len"] - payload in HEADERS]


def end(n: Event, cport: int) -> str:
    """Whose end packet copy ``n`` is (the client's port ``cport``): its sender's
    (egress) or its receiver's (ingress)."""
    port = n["sport"] if n["dir"] == "egress" else n["dport"]
    return "client" if port == cport else "server"


def test_packets_name_the_process_of_their_end() -> None:
    tag = secrets.token_hex(5)
    comms = {"client": f"rtoc{tag}", "server": f"rtos{tag}"}
    work = Workload(comms["client"], comms["server"], script=OWNER_SCRIPT)
    trace = Trace("--events", "net,tcp", "-i", "lo", "--json", "--snaplen", "64")
    try:
        flows = work.run()
    finally:
        work.stop()
        trace.signal(signal.SIGINT)
        lines, _ = trace.finish()
    events = [json.loads(line) for line in lines]
    nets = [e for e in events if e["type"] == "net"]
    owner = {"client": (work.client, comms["client"], 0),
             "server": (work.server, comms["server"], SERVER_UID)}  # fmt: skip
    named = {(p, c, u) for p, c, u in owner.values()}
    for flow in flows:
        cport, sport, host = flow["cport"], flow["sport"], HOST[flow["family"]]
        ours = [n for n in nets if n["proto"] == "tcp" and n["src"] == host
                and {n["sport"], n["dport"]} == {cport, sport}]  # fmt: skip
        assert ours, (flow, nets)
        if flow["old"]:  # opened before the trace: followed by no one
            assert sized(ours, OLD_SIZE) and all(n["pid"] == 0 and n["comm"] == "[net]"
                                                 for n in ours), ours  # fmt: skip
            continue

        for n in ours:  # a packet names its end's process or none
            assert n["pid"] == 0 or (n["pid"], n["comm"], n["uid"]) == owner[end(n, cport)], n
            assert n["pid"] == 0 or n["tid"] == n["pid"], n  # both are single-threaded
            assert (n["pid"], n["comm"], n["uid"]) in named or (
                n["pid"],
                n["comm"],
                n["uid"],
                n["tid"],
                n["cgroup"],
            ) == (0, "[net]", 0, 0, 0)
        for i, size in enumerate(MESSAGES):
            sender = "client" if i % 2 == 0 else "server"
            copies = [n for n in sized(ours, size)
                      if (n["sport"] == cport) == (sender == "client")]  # fmt: skip
            assert {n["dir"] for n in copies} == {"egress", "ingress"}, (size, ours)
            for n in copies:
                if i == 0 and n["dir"] == "ingress":
                    continue  # before the server's first receive: maybe no owner yet
                if not LIVE and end(n, cport) == "server":
                    assert (n["pid"], n["comm"]) == (0, "[net]"), n  # named at its close
                    continue
                pid, comm, uid = owner[end(n, cport)]
                assert (n["pid"], n["tid"], n["comm"], n["uid"]) == (pid, pid, comm, uid), n
                assert n["cgroup"] != 0, n
    udp = [n for n in nets if n["proto"] == "udp" and n["len"] > UDP_SIZE
           and n["dport"] == flows[0]["sport"]]  # fmt: skip
    assert udp and all(n["pid"] == 0 and n["comm"] == "[net]" for n in udp), udp
    tcp = [e for e in events if e["type"] == "tcp" and e["pid"] in (work.client, work.server)]
    assert len(tcp) == 4  # the tcp source's events, as before: each end of the two


def test_a_pid_filter_names_the_packets_of_that_process_only() -> None:
    """``-p SERVER``: the tcp source follows the server's connections only, so only
    the server's end of each connection is named (before 6.3: not before its close,
    so no message of it); every packet is still traced."""
    tag = secrets.token_hex(5)
    work = Workload(f"rtoc{tag}", f"rtos{tag}", script=OWNER_SCRIPT)
    trace = Trace("--events", "net,tcp", "-i", "lo", "--json", "-p", str(work.server))
    try:
        flows = work.run()
    finally:
        work.stop()
        trace.signal(signal.SIGINT)
        lines, _ = trace.finish()
    nets = [e for e in map(json.loads, lines) if e["type"] == "net"]
    for flow in (f for f in flows if not f["old"]):
        cport, sport, host = flow["cport"], flow["sport"], HOST[flow["family"]]
        ours = [n for n in nets if n["proto"] == "tcp" and n["src"] == host
                and {n["sport"], n["dport"]} == {cport, sport}]  # fmt: skip
        last = sized(ours, MESSAGES[-1])  # the server's last answer: both copies
        assert {n["dir"] for n in last} == {"egress", "ingress"}, ours
        for n in ours:
            if end(n, cport) == "client":
                assert (n["pid"], n["comm"]) == (0, "[net]"), n
        for n in last:
            server = end(n, cport) == "server" and LIVE
            want = (work.server, f"rtos{tag}") if server else (0, "[net]")
            assert (n["pid"], n["comm"]) == want, n


def test_the_cached_tcp_program_names_packets_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tcp source with the owners map (a ``-D *_FD`` role of the program cache)
    is compiled once, then loaded from the cache, and the cached program publishes the
    owners the packets are named by."""
    monkeypatch.setenv("RINGTOOL_CACHE_DIR", str(tmp_path / "programs"))
    monkeypatch.delenv("RINGTOOL_NO_CACHE", raising=False)
    opts = TraceOptions(events=("tcp", "net"), iface="lo")
    layout = load_layout()
    origins = []
    for _ in range(2):
        tag = secrets.token_hex(5)
        work = Workload(f"rtoc{tag}", f"rtos{tag}", script=OWNER_SCRIPT)
        s = TraceSession(opts, layout)
        try:
            origins.append(s.origins["tcp"])
            flows = work.run()
            net = Decoder(layout, realtime_offset_ns=0).net_records(s.read_net(final=True))
        finally:
            work.stop()
            s.close()
        packets = Decoder(layout, realtime_offset_ns=0).decode(net.rec)
        for flow in (f for f in flows if not f["old"]):
            answers = [p for p in sized(packets, MESSAGES[1]) if p["sport"] == flow["sport"]
                       and p["dport"] == flow["cport"]]  # fmt: skip
            server = (work.server, f"rtos{tag}") if LIVE else (0, "[net]")  # (see LIVE)
            assert {(p["dir"], p["pid"], p["comm"]) for p in answers} == {
                ("egress", *server), ("ingress", work.client, f"rtoc{tag}")
            }, answers  # fmt: skip
    assert origins == ["compiled", "cache"]
