"""Net packets for tests: raw ``struct trace_net`` samples built field by field, as
:class:`~ringtool.event.records.NetRecords`, random ones (a hypothesis strategy),
and the per-packet decoder records had before they went through the field table
(:func:`old_decode_net`: the reference the new path must equal)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ringtool.event.columns import cstr
from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.event.records import NetRecords

LAYOUT = load_layout()
_PROTOS = {1: "icmp", 6: "tcp", 17: "udp", 58: "icmp6"}


def _addr_bytes(text: str) -> bytes:
    return ipaddress.ip_address(text).packed.ljust(16, b"\0") if text else bytes(16)


def net_sample(payload: bytes = b"", pad: bytes = b"", **fields: Any) -> bytes:
    """One raw sample: a ``struct trace_net`` with ``fields`` set (``ts`` ``cpu``
    ``pid`` ``tid`` ``comm`` (bytes) ``cgroup`` of the header; ``uid`` (the owner's,
    ``owner_uid``); ``src``/``dst`` as
    address text (their family from it unless given); ``dir`` as ``"egress"``/
    ``"ingress"`` or a number; any other column by name), then ``payload``
    (``captured`` is its length unless given), then ``pad``."""
    rec = np.zeros(1, LAYOUT.net)
    rec["h"]["type"] = LAYOUT.type_id("net")
    rec["captured"] = len(payload)
    for key, value in fields.items():
        if key in ("ts", "cpu", "pid", "tid", "comm", "cgroup"):
            rec["h"][key] = value
        elif key in ("src", "dst"):
            rec["saddr" if key == "src" else "daddr"] = np.frombuffer(_addr_bytes(value), np.uint8)
            if "family" not in fields and value:
                rec["family"] = 6 if ":" in value else 4
        elif key == "uid":  # its TCP connection owner's
            rec["owner_uid"] = value
        elif key == "dir" and isinstance(value, str):
            rec["dir"] = value == "egress"
        else:
            rec[key] = value
    return rec.tobytes() + payload + pad


def net_records(samples: list[bytes], decoder: Decoder | None = None) -> NetRecords:
    """The records of raw samples, as the runner builds them."""
    dec = decoder or Decoder(LAYOUT, realtime_offset_ns=0)
    return dec.net_records([(0, s) for s in samples])


def net_event_records(events: list[Mapping[str, Any]], offset_ns: int = 0) -> NetRecords:
    """Records that decode (with ``offset_ns``) to ``events``: net event dicts with
    any of the keys a net event has (``ts`` in seconds, ``comm`` as text; the
    :data:`PRIVATE` keys of the old dicts are not read)."""
    samples = []
    skip = ("type", "ts", "comm", "proto", *PRIVATE)
    for ev in events:
        fields = {k: v for k, v in ev.items() if k not in skip}
        if "ts" in ev:
            fields["ts"] = (round(ev["ts"] * 1e9) - offset_ns) % 2**64  # the kernel's u64
        if "comm" in ev:
            fields["comm"] = ev["comm"].encode()
        if "proto" in ev:
            fields["proto"] = {v: k for k, v in _PROTOS.items()}.get(ev["proto"], 0)
        samples.append(net_sample(**fields))
    return net_records(samples, Decoder(LAYOUT, realtime_offset_ns=offset_ns))


def _addr(family: int, raw: bytes) -> str:
    if family == 4:
        return str(ipaddress.IPv4Address(raw[:4]))
    if family == 6:
        return str(ipaddress.IPv6Address(raw[:16]))
    return ""


def old_decode_net(samples: list[bytes], offset_ns: int) -> list[dict[str, Any]]:
    """What the per-packet decoder (before net records went through the field table)
    made of each sample: the event dict, then ``payload``, ``raw`` and ``ts_ns``
    (samples shorter than the struct left out)."""
    dt = LAYOUT.net
    out = []
    for raw in samples:
        if len(raw) < dt.itemsize:
            continue
        rec = np.frombuffer(raw, dtype=dt, count=1)[0]
        h = rec["h"]
        fam = int(rec["family"])
        captured = int(rec["captured"])
        out.append({
            "type": "net", "ts": (int(h["ts"]) + offset_ns) / 1e9, "cpu": int(h["cpu"]),
            "pid": int(h["pid"]), "tid": int(h["tid"]), "comm": cstr(bytes(h["comm"])) or "[net]",
            "cgroup": int(h["cgroup"]), "uid": int(rec["owner_uid"]),
            "src": _addr(fam, bytes(rec["saddr"])), "dst": _addr(fam, bytes(rec["daddr"])),
            "sport": int(rec["sport"]), "dport": int(rec["dport"]),
            "proto": _PROTOS.get(int(rec["proto"]), str(int(rec["proto"]))),
            "len": int(rec["len"]), "ifindex": int(rec["ifindex"]),
            "dir": "egress" if int(rec["dir"]) else "ingress", "captured": captured,
            "ts_ns": int(h["ts"]) + offset_ns,
            "payload": raw[dt.itemsize : dt.itemsize + captured],
            "raw": raw[: dt.itemsize + captured],
        })  # fmt: skip
    return out


#: Keys of :func:`old_decode_net` that were never output (bytes, the ns stamp).
PRIVATE = ("payload", "raw", "ts_ns")

_u = st.integers
#: A random raw sample: any header bytes (hostile comm), any family (4, 6, other),
#: captured bytes more or fewer than the sample holds, padding after them; or a
#: sample too short for the struct.
raw_sample = st.one_of(
    st.builds(
        lambda head, fam, dirn, captured, payload, pad, ts: (
            _with(head, fam, dirn, captured, ts) + payload + pad
        ),
        st.binary(min_size=LAYOUT.net.itemsize, max_size=LAYOUT.net.itemsize),
        st.sampled_from([4, 6, 0, 5]),
        st.sampled_from([0, 1, 2]),
        st.one_of(_u(0, 64), _u(0, 2**32 - 1)),
        st.binary(max_size=64),
        st.binary(max_size=8),
        _u(0, 2**62),
    ),
    st.binary(max_size=LAYOUT.net.itemsize - 1),
)


def _with(head: bytes, family: int, direction: int, captured: int, ts: int) -> bytes:
    rec = np.frombuffer(bytearray(head), LAYOUT.net, 1).copy()
    rec["family"], rec["dir"], rec["captured"], rec["h"]["ts"] = family, direction, captured, ts
    rec["h"]["type"] = LAYOUT.type_id("net")
    return rec.tobytes()


__all__ = [
    "PRIVATE",
    "net_event_records",
    "net_records",
    "net_sample",
    "old_decode_net",
    "raw_sample",
]
