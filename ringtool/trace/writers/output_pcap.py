"""``ringtool trace --pcap FILE``: the net source's packets as pcapng, as tshark expects.

Each packet is an Enhanced Packet Block on its interface (name from the ifindex), with
its direction in ``epb_flags`` (ingress: inbound, egress: outbound) and a comment with
what else is known: the CPU, the direction, and the process when the TC hook ran in
one (pid 0: softirq, not known).

Loopback: a packet sent on a loopback device passes its egress hook and then, as the
same frame, its ingress hook. Both are real events (the JSON/columns/TUI outputs show
both), but a capture file with both copies makes every TCP segment look retransmitted.
So, as libpcap does for ``tcpdump -i lo``, the file keeps only the ingress copy of a
loopback device's packets (:attr:`PcapSink.loopback_skipped` counts the others).
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ringtool.errors import RingtoolError, UsageError
from ringtool.event.columns import cstrings
from ringtool.event.records import NetRecords, Records
from ringtool.event.safe_text import printable
from ringtool.trace.writers.pcapng import PcapngWriter
from ringtool.trace.writers.private_file import open_private

#: ``IFF_LOOPBACK`` of ``/sys/class/net/IF/flags`` (linux/if.h).
IFF_LOOPBACK = 0x8


def is_loopback(ifname: str) -> bool:
    """Whether ``ifname`` has IFF_LOOPBACK set (False if it cannot be read)."""
    try:
        flags = Path("/sys/class/net", ifname, "flags").read_text()
        return bool(int(flags, 16) & IFF_LOOPBACK)
    except (OSError, ValueError):
        return False


def packet_comment(ev: Mapping[str, Any]) -> str:
    """What is known of where a packet came from: CPU, direction, and its process (its
    TCP connection's owner: docs/trace.md, "Packets and their processes"; pid 0: none
    known)."""
    who = f" pid={ev['pid']} comm={printable(ev['comm'])}" if ev["pid"] else ""
    return f"cpu={ev['cpu']} {ev['dir']}{who}"


class PcapSink:
    """Net events -> a pcapng file (see the module doc). :meth:`open` refuses a file
    that cannot be written before tracing starts; :meth:`write` raises OSError."""

    def __init__(
        self, writer: PcapngWriter, path: Path | None = None, *, realtime_offset_ns: int
    ) -> None:
        self.writer = writer
        self.path = path
        #: CLOCK_REALTIME - CLOCK_MONOTONIC, ns: a packet's ``h.ts`` to its time in the file
        self.offset_ns = realtime_offset_ns
        self._ifaces: dict[int, tuple[str, bool]] = {}  # ifindex -> (name, loopback)
        self.loopback_skipped = 0

    @classmethod
    def open(
        cls, path: Path, snaplen: int, force: bool = False, *, realtime_offset_ns: int
    ) -> PcapSink:
        """A capture on ``path`` whose section header is already on disk (so a file
        that cannot be written, like /dev/full, is a UsageError naming --pcap). The
        file is created 0600 without following a symlink; an existing one only with
        ``force`` (:func:`ringtool.trace.writers.private_file.open_private`)."""
        f = open_private(path, force=force, flag="--pcap")
        try:
            writer = PcapngWriter(f, snaplen=snaplen)
            f.flush()
        except OSError as exc:
            with contextlib.suppress(OSError):
                f.close()
            raise UsageError(f"--pcap {path}: {exc.strerror}") from None
        return cls(writer, path, realtime_offset_ns=realtime_offset_ns)

    def _iface(self, index: int) -> tuple[str, bool]:
        known = self._ifaces.get(index)
        if known is None:
            try:
                name = socket.if_indextoname(index)
            except OSError:
                name = f"if{index}"
            known = self._ifaces[index] = (name, is_loopback(name))
        return known

    def write(self, net: NetRecords) -> None:
        """Write the packets (ingress only on a loopback device), in timestamp order:
        a batch holds each CPU's perf buffer in turn, and a capture out of time order
        reads as retransmissions in tshark (a stable sort)."""
        h = net.rec["h"]
        ts_ns = (h["ts"].astype(np.int64) + self.offset_ns).tolist()
        cols = zip(range(len(net)), ts_ns, net.rec["ifindex"].tolist(),
                   (net.rec["dir"] == 0).tolist(), net.rec["len"].tolist(), h["cpu"].tolist(),
                   h["pid"].tolist(), cstrings(h["comm"]).values, strict=True)  # fmt: skip
        for i, ts, ifindex, inbound, length, cpu, pid, comm in sorted(cols, key=lambda c: c[1]):
            name, loopback = self._iface(ifindex)
            if loopback and not inbound:
                self.loopback_skipped += 1
                continue
            ev = {"cpu": cpu, "dir": "ingress" if inbound else "egress", "pid": pid, "comm": comm}
            self.writer.write_packet(
                net.payload(i), length, ts, ifname=name, comment=packet_comment(ev),
                inbound=inbound,
            )  # fmt: skip

    def publish(self, records: Records) -> None:
        """The :class:`~ringtool.trace.sink.Sink` call: the batch's packets (a write
        that fails is a RingtoolError naming --pcap). The batch is flushed to the file:
        a flight recorder's dump is there for whoever reads it next."""
        if len(records.net):
            try:
                self.write(records.net)
                self.writer.stream.flush()
            except OSError as exc:
                raise RingtoolError(f"--pcap {self.path}: {exc.strerror}") from None

    def tick(self, stats: object) -> list[str]:
        return []

    def close(self, stats: object = None) -> None:
        """Complete the file (RingtoolError naming --pcap when it cannot)."""
        try:
            self.writer.close()
        except OSError as exc:
            raise RingtoolError(f"--pcap {self.path}: {exc.strerror}") from None


__all__ = ["IFF_LOOPBACK", "PcapSink", "is_loopback", "packet_comment"]
