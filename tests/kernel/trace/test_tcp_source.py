"""The tcp source (bpf/trace_tcp.c) on real connections over loopback, and beside
libbpf-tools' tcplife (connections, owners, bytes) and tcpstates (every state change).

The workload (tests/helpers/tcp_workload.py) is a client process and a server process
of names of their own: over 127.0.0.1 and ::1 the client sends 10,000 bytes and the
server replies 3,000, the client closes first; then a connect of each family to a
closed port, refused. It records each end's addresses and ports and the kernel's own
byte counters of the socket just before its close (TCP_INFO). Every end must be
exactly one tcp event of ``ringtool trace --events tcp --json``, with its process, its
addresses, who opened it, its bytes, its states and, for the refused ones, the error.

The bytes are the kernel's counters (tcp_sock.bytes_acked / bytes_received), which
count sequence space: the SYN and the FIN take one number each (RFC 793), so a client
that sent 10,000 bytes has 10,002 acknowledged at its close (its SYN, the payload, its
FIN) and 3,001 received (the reply and the server's FIN); the server 3,001 and 10,001.
"""

from __future__ import annotations

import json
import secrets
import shutil
import signal
import time
from collections import Counter
from typing import Any, NamedTuple

import pytest

from tests.helpers.procs import START_TIMEOUT, Lines, stop
from tests.helpers.tcp_workload import REPLY, SENT, Workload
from tests.helpers.trace import Trace

pytestmark = [pytest.mark.kernel, pytest.mark.all_kernels]

Event = dict[str, Any]
ACTIVE_STATES = ["ESTABLISHED", "SYN_SENT", "FIN_WAIT1", "FIN_WAIT2", "CLOSE"]
PASSIVE_STATES = ["ESTABLISHED", "SYN_RECV", "CLOSE", "CLOSE_WAIT", "LAST_ACK"]
ECONNREFUSED = 111


def comms() -> tuple[str, str]:
    tag = secrets.token_hex(5)
    return f"rtcc{tag}", f"rtcs{tag}"  # 14 bytes: within the kernel's comm


def run_traced(work: Workload, *args: str) -> tuple[list[dict[str, object]], list[Event]]:
    """The workload's record, and every line ``ringtool trace --events tcp --json ARGS``
    wrote while it ran (the events, then the summary)."""
    trace = Trace("--events", "tcp", "--json", *args)
    try:
        ends = work.run()
    finally:
        work.stop()
        trace.signal(signal.SIGINT)
        lines, _ = trace.finish()
    return ends, [json.loads(line) for line in lines]


def traced(work: Workload) -> tuple[list[dict[str, object]], list[Event]]:
    """The workload's record, and the tcp events of its two processes."""
    ends, events = run_traced(work)
    ours = [e for e in events if e["type"] == "tcp" and e["pid"] in (work.client, work.server)]
    return ends, ours


def the_event(events: list[Event], end: dict[str, object]) -> Event:
    """The one event of connection end ``end`` (by role, family, ports)."""
    if end["role"] == "refused":
        found = [e for e in events if e["failed"] and e["rport"] == end["rport"]
                 and e["family"] == end["family"]]  # fmt: skip
    else:
        found = [e for e in events if e["lport"] == end["lport"] and e["rport"] == end["rport"]
                 and e["family"] == end["family"] and not e["failed"]]  # fmt: skip
    assert len(found) == 1, (end, events)
    return found[0]


def test_each_connection_once_with_owner_addresses_bytes_and_states() -> None:
    client_comm, server_comm = comms()
    work = Workload(client_comm, server_comm)
    ends, events = traced(work)
    assert Counter(e["role"] for e in ends) == {"active": 2, "passive": 2, "refused": 2}
    assert len(events) == len(ends), events  # each end once, nothing else of theirs
    for end in ends:
        ev = the_event(events, end)
        active = end["role"] != "passive"
        pid, comm = (work.client, client_comm) if active else (work.server, server_comm)
        assert (ev["pid"], ev["tid"], ev["comm"]) == (pid, pid, comm), (end, ev)
        assert ev["active"] is active and ev["duration_us"] > 0, ev
        assert ev["raddr"] == end["raddr"] and ev["family"] == end["family"], ev
        if end["role"] == "refused":
            assert ev["failed"] and ev["error"] == ECONNREFUSED, ev
            assert ev["states"] == ["SYN_SENT", "CLOSE"], ev
            assert (ev["tx_bytes"], ev["rx_bytes"]) == (0, 0), ev
            continue
        assert ev["laddr"] == end["laddr"] and not ev["failed"] and ev["error"] == 0, ev
        assert ev["states"] == (ACTIVE_STATES if active else PASSIVE_STATES), ev
        # the workload's own counts: the payload, and the kernel's counters before the
        # close; at the close the own FIN is acknowledged (+1), and the client, which
        # closed first, then receives the server's FIN (+1)
        sent, received = (SENT, REPLY) if active else (REPLY, SENT)
        assert (end["sent"], end["received"]) == (sent, received), end
        assert ev["tx_bytes"] == end["acked_before_close"] + 1 == sent + 1 + active, (end, ev)
        assert ev["rx_bytes"] == end["received_before_close"] + active == received + 1, (end, ev)


@pytest.mark.parametrize(
    ("flags", "roles"),
    [
        (("-p", "SERVER"), {"passive"}),
        (("-c", "CLIENT"), {"active", "refused"}),
        (("-c", "CLIENT", "-x"), {"refused"}),
    ],
)
def test_filters_apply_to_the_connections_owner(flags: tuple[str, ...], roles: set[str]) -> None:
    """-p, -c and -x select connections by their owner in the kernel: the summary
    counts only what they let through (other connections of the machine included)."""
    client_comm, server_comm = comms()
    work = Workload(client_comm, server_comm)
    args = [{"SERVER": str(work.server), "CLIENT": client_comm}.get(f, f) for f in flags]
    ends, events = run_traced(work, *args)
    tcp = [e for e in events if e["type"] == "tcp"]
    wanted = [end for end in ends if end["role"] in roles]
    assert len(tcp) == len(wanted), tcp
    for end in wanted:
        the_event(tcp, end)
    summary = next(e for e in events if e["type"] == "summary")
    assert summary["events"] == len(wanted), summary


def tcplife_lines(out: list[str], comms: tuple[str, ...]) -> list[list[str]]:
    """tcplife's output rows (``-w``: PID COMM LADDR LPORT RADDR RPORT TX_KB RX_KB MS)
    of the processes named ``comms``."""
    rows = [line.split() for line in out]
    return [r for r in rows if len(r) == 9 and r[1] in comms]


def as_tcplife(ev: Event) -> list[str]:
    """An event as tcplife prints it (its KB with two decimals), but for the time."""
    return [str(ev["pid"]), ev["comm"], ev["laddr"], str(ev["lport"]), ev["raddr"],
            str(ev["rport"]), f"{ev['tx_bytes'] / 1024:.2f}",
            f"{ev['rx_bytes'] / 1024:.2f}"]  # fmt: skip


def test_the_same_connections_and_bytes_as_tcplife() -> None:
    tcplife = shutil.which("tcplife")
    assert tcplife, "tcplife is not installed: scripts/setup.sh installs libbpf-tools"
    client_comm, server_comm = comms()
    work = Workload(client_comm, server_comm)
    # tcplife writes through stdio: line-buffered, so its header says it is attached
    peer = Lines(["stdbuf", "-oL", tcplife, "-w"])
    try:
        deadline = time.monotonic() + 120
        while not any(line.startswith("PID") for line in list(peer.lines)):
            assert peer.proc.poll() is None, peer.err
            assert time.monotonic() < deadline, "tcplife did not start"
            time.sleep(0.1)
        ends, events = traced(work)
        time.sleep(0.5)  # tcplife polls its perf buffer every 100 ms
    finally:
        stop(peer.proc, signal.SIGINT)
        peer.join()
    theirs = tcplife_lines(peer.lines, (client_comm, server_comm))
    assert len(events) == len(ends) == 6, (events, peer.lines)
    # event for event: pid, comm, both ends, and the bytes at tcplife's precision
    assert sorted(r[:8] for r in theirs) == sorted(as_tcplife(e) for e in events), theirs
    # the milliseconds: tcplife's clock starts at the last state before FIN_WAIT1
    # (ESTABLISHED), ours at the first (SYN_SENT / SYN_RECV): never shorter
    for row in theirs:
        ev = next(e for e in events if as_tcplife(e) == row[:8])
        assert ev["duration_us"] / 1000 >= float(row[8]) - 0.01, (ev, row)


class Change(NamedTuple):
    """One line of tcpstates (``-w``: SKADDR PID COMM IP LADDR LPORT RADDR RPORT
    OLDSTATE -> NEWSTATE MS): a state change of the socket at ``sk``. Its pid and comm
    are whatever task the CPU ran (softirq for most changes), so they are not kept."""

    sk: str
    family: int
    laddr: str
    lport: int
    raddr: str
    rport: int
    old: str
    new: str


def tcpstates_changes(out: list[str]) -> list[Change]:
    """tcpstates' lines as changes (the header aside); read from the right, where a
    COMM with spaces cannot shift the fields."""
    rows = [line.split() for line in out]
    return [Change(r[0], int(r[-9]), r[-8], int(r[-7]), r[-6], int(r[-5]), r[-4], r[-2])
            for r in rows if len(r) >= 12 and r[-3] == "->" and r[-5].isdigit()]  # fmt: skip


Key = tuple[int, int, int]  # family, local port, remote port: one end of a connection


def the_workloads(ends: list[dict[str, object]], family: int, lport: int, rport: int) -> bool:
    """Whether a connection end (family, ports) is one of the workload's ``ends``: one
    of its exchanges' by both ports, or a connect to a port it was refused on (whose
    local port only the tracers know)."""
    return any(e["family"] == family and e["rport"] == rport
               and (e["role"] == "refused" or e["lport"] == lport) for e in ends)  # fmt: skip


def tcpstates_lives(
    changes: list[Change], ends: list[dict[str, object]]
) -> dict[Key, list[Change]]:
    """The state changes of each of the workload's connection ends, by its key. An end
    is found by its change to CLOSE (where its ports are final; a listener's LISTEN ->
    CLOSE is not a connection); its life is every change of that socket (SKADDR) with
    its remote port and its local port, or with local port 0: an active end enters
    SYN_SENT before connect(2) chooses its port (tcp_v4_connect, tcp_v6_connect)."""
    lives: dict[Key, list[Change]] = {}
    for last in changes:
        if last.new != "CLOSE" or last.old == "LISTEN":
            continue
        if not the_workloads(ends, last.family, last.lport, last.rport):
            continue
        key = (last.family, last.lport, last.rport)
        assert key not in lives, (key, changes)  # a 4-tuple closes once here
        lives[key] = [c for c in changes if c.sk == last.sk and c.family == last.family
                      and c.rport == last.rport and c.lport in (last.lport, 0)]  # fmt: skip
    return lives


# host_only: tcpstates groups a socket's changes by its address, and where the kernel
# reports an accepted socket's first change is the kernel's own: on 6.12 (Debian's
# trixie guest) no LISTEN -> SYN_RECV change of the child's socket reached tcpstates,
# on 6.18 and 7.2 it did. The states the tcp source reports on each kernel are
# checked by the tests above (every kernel); this compares them with the peer here.
@pytest.mark.host_only
def test_each_connections_states_are_those_tcpstates_saw() -> None:
    """Event for event with tcpstates: the same connections of the workload (by family
    and ports), and each one's ``states`` are the NEWSTATEs tcpstates printed for its
    socket, from its first change (CLOSE -> SYN_SENT for connect(2), LISTEN -> SYN_RECV
    for the child a listener makes) to its change to CLOSE. The first OLDSTATE is not
    one of ours: ringtool follows a connection from the state it enters there (bpf/
    trace_tcp.c's begin() sets the new state's bit only), so an accepted one never
    has LISTEN (its listener's state, which the child starts with), and an active
    one's CLOSE is its last NEWSTATE. A refused connect is CLOSE -> SYN_SENT, SYN_SENT
    -> CLOSE: ["SYN_SENT", "CLOSE"]. No state comes twice in these lives, so the
    sorted NEWSTATEs must be the states themselves, each once. Exact: tcpstates prints
    every change of these few sockets, and nothing here depends on time but bounded
    waits."""
    tcpstates = shutil.which("tcpstates")
    assert tcpstates, "tcpstates is not installed: scripts/setup.sh installs libbpf-tools"
    client_comm, server_comm = comms()
    work = Workload(client_comm, server_comm)
    # through stdio, line-buffered: its header comes once it is attached
    peer = Lines(["stdbuf", "-oL", tcpstates, "-w"])
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not any(line.startswith("SKADDR") for line in list(peer.lines)):
            assert peer.proc.poll() is None, peer.err
            assert time.monotonic() < deadline, "tcpstates did not start"
            time.sleep(0.1)
        ends, lines = run_traced(work)  # both tracers were ready before it began
        # tcpstates polls its perf buffers: wait (bounded) for each end's first change
        # and its CLOSE
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            got = tcpstates_lives(tcpstates_changes(list(peer.lines)), ends).values()
            if len(got) == len(ends) and all(len(life) > 1 for life in got):
                break
            time.sleep(0.1)
    finally:
        stop(peer.proc, signal.SIGINT)
        peer.join()
    assert "events on CPU" not in peer.err, peer.err  # "lost N events on CPU #C"
    lives = tcpstates_lives(tcpstates_changes(peer.lines), ends)
    mine = [e for e in lines if e["type"] == "tcp"
            and the_workloads(ends, e["family"], e["lport"], e["rport"])]  # fmt: skip
    ours = {(e["family"], e["lport"], e["rport"]): e for e in mine}
    # the same connections: each of the workload's ends, once in each
    assert len(ends) == len(mine) == len(ours) == 6, (ends, mine)
    assert all(sum(the_workloads([end], *key) for key in ours) == 1 for end in ends), ours
    assert sorted(ours) == sorted(lives), (ours, lives)
    for key, life in lives.items():
        ev = ours[key]
        # its whole life, from the change that opened it
        opened = ("CLOSE", "SYN_SENT") if ev["active"] else ("LISTEN", "SYN_RECV")
        assert [(c.old, c.new) for c in life if c.new == opened[1]] == [opened], life
        assert sorted(ev["states"]) == sorted(c.new for c in life), (ev, life)
        last = next(c for c in life if c.new == "CLOSE")
        assert (ev["laddr"], ev["raddr"]) == (last.laddr, last.raddr), (ev, last)
