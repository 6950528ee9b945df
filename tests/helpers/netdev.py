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


__all__ = ["Dummy", "dummy"]
