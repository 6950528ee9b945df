"""The tcp source's live counters (bpf/trace_tcp.c's ``proc_io`` and ``conns``, read by
ringtool/trace/reading/tcp_maps.py for the dashboard's NET TX/RX column and its
drill-down) on a loopback connection held open between two processes: the client sent
10,000 bytes and got 3,000.

Where the kernel has ``sock:sock_send_length``/``sock_recv_length`` (6.3 on) each
process's bytes are exactly what its send and receive calls passed (payload, not
sequence space), and both ends of the open connection are listed with their owner
(the server's taken at its first receive call), state, ports and bytes. Before 6.3
there are no live counters, and only the client's end (owned from its connect) is
listed, its bytes 0."""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from ringtool.event.tcp_data import STATE_NAMES, address
from ringtool.trace.reading.session import TraceOptions
from ringtool.trace.reading.tcp_maps import read_conns, read_proc_io
from tests.helpers.tcp_hold import HeldConnection
from tests.helpers.tcp_workload import REPLY, SENT
from tests.helpers.trace import traced

pytestmark = [pytest.mark.kernel, pytest.mark.all_kernels]

LIVE = (
    Path("/sys/kernel/tracing/events/sock/sock_send_length").exists()
    or Path("/sys/kernel/debug/tracing/events/sock/sock_send_length").exists()
)


def test_live_bytes_per_process_and_the_open_connection() -> None:
    tag = secrets.token_hex(5)
    with traced(TraceOptions(events=("tcp",))) as s:
        held = HeldConnection(f"rtlc{tag}", f"rtls{tag}")
        try:
            obj = s.sources["tcp"]
            io = read_proc_io(obj)
            conns = read_conns(obj, s.layout, {held.client, held.server})
            others = read_conns(obj, s.layout, {held.client + 10**7})  # nobody's
        finally:
            held.close()
        after = read_conns(obj, s.layout, {held.client, held.server})
    assert len(others) == 0 and len(after) == 0  # closed: no more in conns
    ends = {int(c["pid"]): c for c in conns}
    client = ends[held.client]
    assert (int(client["sport"]), int(client["dport"])) == (held.lport, held.rport)
    assert address(bytes(client["daddr"])) == "127.0.0.1"
    assert STATE_NAMES[int(client["state"])] == "ESTABLISHED" and client["active"] == 1
    if not LIVE:
        assert io is None and set(ends) == {held.client}
        assert (int(client["tx_bytes"]), int(client["rx_bytes"])) == (0, 0)
        return
    assert io is not None
    assert io[held.client] == (SENT, REPLY) and io[held.server] == (REPLY, SENT)
    assert set(ends) == {held.client, held.server}
    server = ends[held.server]
    assert (int(client["tx_bytes"]), int(client["rx_bytes"])) == (SENT, REPLY)
    assert (int(server["tx_bytes"]), int(server["rx_bytes"])) == (REPLY, SENT)
    assert (int(server["sport"]), int(server["dport"])) == (held.rport, held.lport)
    assert server["active"] == 0 and STATE_NAMES[int(server["state"])] == "ESTABLISHED"
