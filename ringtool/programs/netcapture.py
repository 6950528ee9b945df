"""Packet payload capture through a PERF_EVENT_ARRAY: bpf/net_capture.c on a veth pair.

:class:`NetCapture` is a context manager that builds a private test network — a
network namespace and a veth pair (one end in the root namespace, its peer inside the
namespace) — with pyroute2, attaches the TC program (clsact qdisc + direct-action
``bpf`` filter) and tears everything down on exit *or on any error while setting up*
(qdisc, veth pair, namespace, BPF module), in reverse order, each step on its own.

Each captured packet arrives as one perf sample: ``struct capture_event`` then the
first ``captured`` packet bytes (from the MAC header) — appended by the kernel because
the program passes the length in BPF_F_CTXLEN_MASK — then padding. :func:`parse`
decodes it::

    with NetCapture() as cap, ringtool.PerfBuffer(cap.events, on_sample) as pb:
        cap.send_frame(frame)          # AF_PACKET out of the host end
        pb.poll(1000)                  # on_sample(cpu, data): parse(data).payload == frame
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
from dataclasses import dataclass
from typing import Any, Literal, Self

from ringtool.errors import RingtoolError
from ringtool.kernel.closing import Closing
from ringtool.programs.loader import compile_program, load_function

# struct capture_event in bpf/net_capture.c: u32 magic, ifindex, pkt_len, captured; u64 ts.
CAPTURE_EVENT = struct.Struct("<IIIIQ")
CAPTURE_MAGIC = 0x50414352
TC_INGRESS = "ffff:fff2"  # clsact parents (TC_H_MIN_INGRESS / TC_H_MIN_EGRESS)
TC_EGRESS = "ffff:fff3"
_ids = itertools.count()


class NetCaptureError(RingtoolError):
    """The namespace, veth pair or TC attachment could not be set up."""


@dataclass(frozen=True, slots=True)
class CapturedPacket:
    ifindex: int
    pkt_len: int  # the packet's full length (skb->len)
    ts_ns: int
    payload: bytes  # its first min(pkt_len, max_capture) bytes


def parse(data: bytes | memoryview) -> CapturedPacket:
    """Decode one sample of bpf/net_capture.c (ValueError if it is not one)."""
    if len(data) < CAPTURE_EVENT.size:
        raise ValueError(f"capture sample of {len(data)} bytes is shorter than its header")
    magic, ifindex, pkt_len, captured, ts = CAPTURE_EVENT.unpack_from(data)
    end = CAPTURE_EVENT.size + captured
    if magic != CAPTURE_MAGIC or end > len(data):
        raise ValueError(f"not a capture sample (magic {magic:#x}, captured {captured})")
    return CapturedPacket(ifindex, pkt_len, ts, bytes(data[CAPTURE_EVENT.size : end]))


class NetCapture(Closing):
    """A netns + veth pair with bpf/net_capture.c attached; see the module doc.

    ``side``/``direction``: where the filter goes — ``"peer"`` (the end inside the
    namespace, default) or ``"host"``, on ``"ingress"`` (default) or ``"egress"``.
    Frames sent out of the host end (``send_frame``) arrive at the peer's ingress.
    ``max_capture`` caps the bytes appended per packet (``-DNET_CAPTURE_MAX``).
    After ``__enter__``: ``events`` (the PERF_EVENT_ARRAY table), ``netns``,
    ``host_if``/``peer_if`` names and ``host_index``/``peer_index``.
    """

    def __init__(
        self,
        *,
        max_capture: int = 1514,
        side: Literal["peer", "host"] = "peer",
        direction: Literal["ingress", "egress"] = "ingress",
    ) -> None:
        tag = f"{os.getpid() % 100000}x{next(_ids)}"
        self.netns = f"ringtool-cap-{tag}"
        self.host_if = f"rt{tag}h"[:15]
        self.peer_if = f"rt{tag}p"[:15]
        self.max_capture = max_capture
        self.side = side
        self.parent = TC_INGRESS if direction == "ingress" else TC_EGRESS
        self.host_index = 0
        self.peer_index = 0
        self._bpf: Any = None
        self._undo: list[tuple[str, Any]] = []

    @property
    def events(self) -> Any:
        """The ``captures`` PERF_EVENT_ARRAY (give it to :class:`ringtool.PerfBuffer`)."""
        if self._bpf is None:
            raise NetCaptureError("NetCapture is not set up: use it in a `with` block")
        return self._bpf[b"captures"]

    def __enter__(self) -> Self:
        try:
            self._setup()
        except BaseException as exc:
            self.close()
            if isinstance(exc, RingtoolError | KeyboardInterrupt):
                raise
            raise NetCaptureError(f"capture setup failed: {exc}") from exc
        return self

    def _setup(self) -> None:
        from pyroute2 import IPRoute, netns

        self._bpf = compile_program("net_capture.c", defines={"NET_CAPTURE_MAX": self.max_capture})
        self._undo.append(("bpf", None))
        fn = load_function(self._bpf, "capture", "SCHED_CLS")
        netns.create(self.netns)
        self._undo.append(("netns", None))
        with IPRoute() as ipr:
            ipr.link("add", ifname=self.host_if, kind="veth", peer=self.peer_if)
            self._undo.append(("veth", None))
            self.host_index = ipr.link_lookup(ifname=self.host_if)[0]
            peer = ipr.link_lookup(ifname=self.peer_if)[0]
            ipr.link("set", index=peer, net_ns_fd=self.netns)
            ipr.link("set", index=self.host_index, state="up")
        with IPRoute(netns=self.netns) as nsr:
            self.peer_index = nsr.link_lookup(ifname=self.peer_if)[0]
            nsr.link("set", index=self.peer_index, state="up")
        in_ns = self.side == "peer"
        index = self.peer_index if in_ns else self.host_index
        with IPRoute(netns=self.netns) if in_ns else IPRoute() as tc:
            tc.tc("add", "clsact", index)
            self._undo.append(("qdisc", (in_ns, index)))
            tc.tc(
                "add-filter", "bpf", index, ":1", fd=fn.fd, name=fn.name.decode(),
                parent=self.parent, classid=1, direct_action=True,
            )  # fmt: skip

    def send_frame(self, frame: bytes) -> None:
        """Send one raw Ethernet frame out of the host end (AF_PACKET)."""
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as s:
            s.bind((self.host_if, 0))
            s.send(frame)

    def close(self) -> None:
        """Undo every step that was done, newest first; each failure is ignored so the
        rest still happens (deleting the veth deletes its peer; removing the namespace
        deletes whatever is left in it). Idempotent."""
        from pyroute2 import IPRoute, netns

        while self._undo:
            step, arg = self._undo.pop()
            try:
                if step == "qdisc":
                    in_ns, index = arg
                    with IPRoute(netns=self.netns) if in_ns else IPRoute() as ipr:
                        ipr.tc("del", "clsact", index)
                elif step == "veth":
                    with IPRoute() as ipr:
                        for idx in ipr.link_lookup(ifname=self.host_if):
                            ipr.link("del", index=idx)
                elif step == "netns":
                    netns.remove(self.netns)
                elif step == "bpf" and self._bpf is not None:
                    self._bpf.cleanup()
                    self._bpf = None
            except Exception:  # best effort: go on with the rest
                pass
