"""A network interface of the test's own (no other test's traffic or TC filters on
it): one end of a veth pair, whose packets to :attr:`Dummy.peer` (a permanent
neighbour entry: no ARP) leave through its egress hook."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Dummy:
    name: str
    peer: str  # an address routed out of the interface (nobody answers)

    def send_udp(self, payload: bytes, count: int, port: int = 9) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for _ in range(count):
                s.sendto(payload, (self.peer, port))

    def filters(self, hook: str) -> str:
        """``tc filter show dev NAME HOOK``."""
        return subprocess.run(["tc", "filter", "show", "dev", self.name, hook],
                              capture_output=True, text=True, check=True).stdout  # fmt: skip


def add_bpf_filter(dev: str, hook: str, prio: int, handle: int, name: str) -> None:
    """A direct-action bpf filter (a program that passes every packet on) on ``dev``'s
    clsact ``hook`` (``"ingress"``/``"egress"``; the clsact must be there), named
    ``name``, as another tool (or another namespace's ringtool) would add it."""
    from bcc import BPF
    from pyroute2 import IPRoute

    prog = BPF(text=b"int pass(struct __sk_buff *skb) { return -1; }")  # TC_ACT_UNSPEC
    try:
        fn = prog.load_func(b"pass", BPF.SCHED_CLS)
        parent = {"ingress": "ffff:fff2", "egress": "ffff:fff3"}[hook]
        with IPRoute() as ipr:
            index = ipr.link_lookup(ifname=dev)[0]
            ipr.tc("add-filter", "bpf", index, handle, fd=fn.fd, name=name, parent=parent,
                   classid=1, direct_action=True, prio=prio)  # fmt: skip
    finally:
        prog.cleanup()


@contextmanager
def dummy() -> Iterator[Dummy]:
    """A new veth pair, both ends up, this one 198.18.N.1/24 (RFC 2544 test range);
    deleted after."""
    n = os.getpid() % 250 + 1
    name = f"rtdum{os.getpid() % 100000}"
    peer = f"198.18.{n}.2"
    ip = ["ip", "link"]
    subprocess.run([*ip, "add", name, "type", "veth", "peer", "name", f"{name}p"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", f"198.18.{n}.1/24", "dev", name], check=True)
        subprocess.run([*ip, "set", f"{name}p", "up"], check=True)
        subprocess.run([*ip, "set", name, "up"], check=True)
        subprocess.run(["ip", "neigh", "replace", peer, "lladdr", "02:00:00:00:00:02", "dev",
                        name, "nud", "permanent"], check=True)  # fmt: skip
        yield Dummy(name, peer)
    finally:
        subprocess.run([*ip, "del", name], check=False)


__all__ = ["Dummy", "add_bpf_filter", "dummy"]
