"""``ringtool bench trace``'s ``trace-net-cost`` phase: what a packet costs the net
source's TC program with and without the owner lookup, and what a TCP connection
costs the tcp source with and without publishing its owner (docs/trace.md, "Packets
and their processes").

* Per packet (:func:`packet_cost`): bpf/trace_net.c's egress program compiled as
  the net source alone has it (``none``: no lookup, the program of a trace without
  the tcp source), and with an owners map (``miss``: empty; ``hit``: holding the
  packet's connection), each run with ``BPF_PROG_TEST_RUN`` on one CPU on a TCP/IPv4
  packet of :data:`PACKET_BYTES` bytes, its samples going to a perf buffer that is
  drained between bursts (without wakeups, as ``bench perfbuf`` fills): the kernel's
  average ns per run, the median of :data:`ROUNDS_OF_RUNS` alternating rounds, and
  its ratio to ``none``.
* Per connection (:func:`tcp_cost`): ``ringtool trace --json --cost`` of ``tcp``
  alone and of ``net,tcp`` on ``lo`` (owners published; the sock:sock_send_length /
  sock_recv_length programs), each pinned to the trace CPU while
  :class:`LoopbackTalk` runs over 127.0.0.1 (threads of the bench on the producer
  CPU: connections of :data:`ROUNDS` request/answer pairs, one after another); the
  tcp source's programs' runs, average ns, ns per connection, and the ratio of
  ``net,tcp``'s to ``tcp``'s. Every TCP socket's sends and receives on the machine
  count (other processes' too).

Only numbers; nothing here is asserted.
"""

from __future__ import annotations

import os
import socket
import statistics
import struct
import threading
import time
from typing import Any

from ringtool.bench.perfbuf import NO_WAKEUP
from ringtool.bench.trace_proc import TraceChild
from ringtool.bench.trace_sources import per_source
from ringtool.event.layout import load_layout
from ringtool.kernel import bpf
from ringtool.programs.loader import compile_program, load_function
from ringtool.readers.perfbuf import PerfBuffer
from ringtool.trace.reading import tcp_owners
from ringtool.trace.reading.sources import SOURCE_NAMED

#: request/answer pairs per connection, and their size
ROUNDS = 20
MESSAGE = 200
RUNS = (("tcp", None), ("net,tcp", "lo"))
#: the test packet's length, the runs between two drains of the perf buffer
PACKET_BYTES = 154
BURST = 2000
SRC, DST = ("10.7.0.1", 443), ("10.7.0.2", 51000)
#: rounds of the three runs (medians kept)
ROUNDS_OF_RUNS = 3


class LoopbackTalk:
    """The workload (see the module doc) on ``cpu`` for ``seconds``: :meth:`run`
    returns the connections it made."""

    def __init__(self, cpu: int, seconds: float) -> None:
        self.cpu, self.seconds = cpu, seconds
        self.listener = socket.create_server(("127.0.0.1", 0))
        self._done = threading.Event()

    def _serve(self) -> None:
        os.sched_setaffinity(0, {self.cpu})
        while not self._done.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                while data := conn.recv(65536):
                    conn.sendall(data)

    def run(self) -> int:
        server = threading.Thread(target=self._serve, name="bench-net-server", daemon=True)
        server.start()
        os.sched_setaffinity(0, {self.cpu})
        conns, end = 0, time.monotonic() + self.seconds
        at = self.listener.getsockname()
        try:
            while time.monotonic() < end:
                with socket.create_connection(at) as s:
                    for _ in range(ROUNDS):
                        s.sendall(b"q" * MESSAGE)
                        got = 0
                        while got < MESSAGE:
                            got += len(s.recv(MESSAGE - got) or b"x" * MESSAGE)
                conns += 1
        finally:
            self._done.set()
            self.listener.close()
            server.join(5)
            os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
        return conns


def _run(events: str, iface: str | None, seconds: float, trace_cpu: int,
         producer_cpu: int) -> dict[str, Any]:  # fmt: skip
    """One traced run of the workload; its row (see the module doc)."""
    args = ["--events", events, "--json", *(["-i", iface] if iface else [])]
    child = TraceChild(args, trace_cpu, bpf_stats=True)
    try:
        child.wait_ready()
        conns = LoopbackTalk(producer_cpu, seconds).run()
        done = child.finish(interrupt=True)
    finally:
        child.kill()
    row: dict[str, Any] = {"bench": "trace-net-cost", "events": events, "connections": conns}
    for source, figures in sorted(per_source(done.summary).items()):
        runs, ns = figures["runs"], figures["run_time_ns"]
        row[f"{source}_runs"] = runs
        row[f"{source}_avg_ns"] = round(ns / runs, 1) if runs else None
        row[f"{source}_ns_per_conn"] = round(ns / conns, 1) if conns else None
    return row


def _ratio(a: Any, b: Any) -> float | None:
    return round(a / b, 3) if a and b else None


def _median_row(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``rows`` of one kind of run as one: each figure's median (``rounds``: how many)."""
    out = dict(rows[0])
    for key, value in rows[0].items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            got = [r[key] for r in rows if r.get(key) is not None]
            out[key] = statistics.median(got) if got else None
    out["rounds"] = len(rows)
    return out


def tcp_cost(seconds: float, *, trace_cpu: int, producer_cpu: int,
             rounds: int = ROUNDS_OF_RUNS) -> list[dict[str, Any]]:  # fmt: skip
    """The per-connection rows (see the module doc)."""
    runs: list[list[dict[str, Any]]] = [[] for _ in RUNS]
    for _ in range(rounds):
        for i, (events, iface) in enumerate(RUNS):
            runs[i].append(_run(events, iface, seconds, trace_cpu, producer_cpu))
    tcp, both = (_median_row(r) for r in runs)
    both["tcp_ns_per_conn_ratio"] = _ratio(both.get("tcp_ns_per_conn"), tcp.get("tcp_ns_per_conn"))
    return [tcp, both]


def tcp_packet(payload: int) -> bytes:
    """An Ethernet/IPv4/TCP packet from :data:`SRC` to :data:`DST` with ``payload``
    bytes."""
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40 + payload, 1, 0, 64, 6, 0,
                     socket.inet_aton(SRC[0]), socket.inet_aton(DST[0]))  # fmt: skip
    tcp = struct.pack("!HHIIBBHHH", SRC[1], DST[1], 1, 1, 0x50, 0x18, 1024, 0, 0)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + ip + tcp + b"p" * payload


def _v4_key(addr: str) -> bytes:
    return bytes(10) + b"\xff\xff" + socket.inet_aton(addr)


def _egress_program(owners_fd: int | None) -> Any:
    """bpf/trace_net.c compiled as the trace does (with ``owners_fd``'s constants)."""
    net = SOURCE_NAMED["net"]
    defines: dict[str, int | str] = {**load_layout().size_defines(), "TRACE_SNAPLEN": 96}
    if owners_fd is not None:
        defines.update(tcp_owners.owner_defines(owners_fd))
    obj = compile_program(net.bpf_file, defines=defines, needs=net.needs)
    return obj, load_function(obj, "trace_net_egress", "SCHED_CLS")


def _ns_per_run(obj: Any, fd: int, cpu: int, runs: int) -> float:
    """The kernel's average ns of ``runs`` test runs on ``cpu`` (bursts, each drained)."""
    packet = tcp_packet(PACKET_BYTES - 54)
    done, total_ns = 0, 0
    with PerfBuffer(obj[b"net_events"], lambda c, d: None, page_cnt=256, cpus=[cpu],
                    wakeup_events=NO_WAKEUP) as pb:  # fmt: skip
        while done < runs:
            n = min(BURST, runs - done)
            total_ns += bpf.prog_test_run(fd, data=packet, repeat=n).duration_ns * n
            pb.consume()
            done += n
    return total_ns / runs


def packet_cost(runs: int, *, cpu: int, rounds: int = ROUNDS_OF_RUNS) -> list[dict[str, Any]]:
    """The per-packet rows (see the module doc): ``runs`` test runs of each variant a
    round."""
    owners = tcp_owners.make_owners()
    progs = {}
    try:
        progs["none"] = _egress_program(None)
        progs["miss"] = progs["hit"] = _egress_program(owners)
        key = _v4_key(SRC[0]) + _v4_key(DST[0]) + struct.pack("<HH", SRC[1], DST[1])
        owner = struct.pack("<16sQIIII", b"bench", 0, os.getpid(), os.getpid(), 0, 0)
        ns: dict[str, list[float]] = {v: [] for v in progs}
        old = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {cpu})
        try:
            for _ in range(rounds):
                for variant, (obj, fn) in progs.items():
                    if variant == "hit":
                        bpf.map_update(owners, key, owner)
                    ns[variant].append(_ns_per_run(obj, fn.fd, cpu, runs))
                    if variant == "hit":
                        bpf.map_delete(owners, key)
        finally:
            os.sched_setaffinity(0, old)
    finally:
        for obj, _ in {id(p[0]): p for p in progs.values()}.values():
            obj.cleanup()
        bpf.close_fd(owners)
    base = statistics.median(ns["none"])
    return [{"bench": "trace-net-cost", "per": "packet", "owners": v, "runs": runs,
             "rounds": rounds, "ns_per_packet": round(statistics.median(t), 1),
             "ratio_to_none": _ratio(statistics.median(t), base)}
            for v, t in ns.items()]  # fmt: skip


__all__ = ["LoopbackTalk", "packet_cost", "tcp_cost", "tcp_packet"]
