"""A pure-Python pcapng writer and reader (what ``--pcap`` writes; tshark reads it).

Blocks (pcapng draft, IETF opsawg-pcapng; little-endian as written here):

* Section Header Block (0x0A0D0D0A): byte-order magic 0x1A2B3C4D, version 1.0,
  section length -1 (unknown);
* Interface Description Block (1), one per interface name, in order of first use:
  link type 1 (Ethernet), snaplen, options ``if_name`` (2) and ``if_tsresol`` (9) = 9
  (timestamps in nanoseconds);
* Enhanced Packet Block (6): interface id, timestamp high/low (ns since the epoch),
  captured and original length, data padded to 4, options ``opt_comment`` (1) with
  the process/CPU where known and ``epb_flags`` (2), a u32 whose bits 0-1 are the
  direction: 01 inbound, 10 outbound, 00 not known (tshark's
  ``frame.packet_flags_direction``).

Every block is ``type, total length, body, total length``; options are
``code (u16), length (u16), value padded to 4``, ended by ``opt_endofopt`` (0).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

from ringtool.errors import PcapngFormatError

SHB = 0x0A0D0D0A
IDB = 1
EPB = 6
BYTE_ORDER_MAGIC = 0x1A2B3C4D
LINKTYPE_ETHERNET = 1
OPT_ENDOFOPT = 0
OPT_COMMENT = 1
IF_NAME = 2
IF_TSRESOL = 9
EPB_FLAGS = 2
#: epb_flags bits 0-1 (the direction)
FLAG_INBOUND = 0b01
FLAG_OUTBOUND = 0b10


def _pad4(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 4)


def _options(opts: list[tuple[int, bytes]]) -> bytes:
    if not opts:
        return b""
    out = b"".join(struct.pack("<HH", code, len(v)) + _pad4(v) for code, v in opts)
    return out + struct.pack("<HH", OPT_ENDOFOPT, 0)


def _block(btype: int, body: bytes) -> bytes:
    total = 12 + len(body)
    return struct.pack("<II", btype, total) + body + struct.pack("<I", total)


class PcapngWriter:
    """Writes packets to ``stream`` (binary, owned: closed by :meth:`close`)."""

    def __init__(self, stream: BinaryIO, *, snaplen: int = 65535) -> None:
        self.stream = stream
        self.snaplen = snaplen
        self._ifaces: dict[str, int] = {}
        body = struct.pack("<IHHq", BYTE_ORDER_MAGIC, 1, 0, -1)
        self.stream.write(_block(SHB, body))

    def _iface(self, name: str) -> int:
        idx = self._ifaces.get(name)
        if idx is None:
            idx = self._ifaces[name] = len(self._ifaces)
            # an interface name from the OS need not be UTF-8 (surrogate escapes)
            raw_name = name.encode("utf-8", "backslashreplace")
            opts = _options([(IF_NAME, raw_name), (IF_TSRESOL, bytes([9]))])
            body = struct.pack("<HHI", LINKTYPE_ETHERNET, 0, self.snaplen) + opts
            self.stream.write(_block(IDB, body))
        return idx

    def write_packet(
        self,
        data: bytes,
        orig_len: int,
        ts_ns: int,
        *,
        ifname: str = "eth",
        comment: str = "",
        inbound: bool | None = None,
    ) -> None:
        """One Ethernet frame (its first bytes) seen at ``ts_ns`` (CLOCK_REALTIME ns);
        ``inbound``: received (True) or sent (False) on ``ifname``, None: not known."""
        iface = self._iface(ifname)
        head = struct.pack(
            "<IIIII", iface, (ts_ns >> 32) & 0xFFFFFFFF, ts_ns & 0xFFFFFFFF, len(data),
            max(orig_len, len(data)),
        )  # fmt: skip
        opts: list[tuple[int, bytes]] = []
        if comment:
            opts.append((OPT_COMMENT, comment.encode("utf-8", "backslashreplace")))
        if inbound is not None:
            flags = FLAG_INBOUND if inbound else FLAG_OUTBOUND
            opts.append((EPB_FLAGS, struct.pack("<I", flags)))
        self.stream.write(_block(EPB, head + _pad4(bytes(data)) + _options(opts)))

    def close(self) -> None:
        self.stream.close()


@dataclass(frozen=True)
class Packet:
    ifname: str
    ts_ns: int
    data: bytes
    orig_len: int
    comment: str
    inbound: bool | None = None  # epb_flags direction; None: not given


def _parse_options(raw: bytes, where: int) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    off = 0
    while off + 4 <= len(raw):
        code, length = struct.unpack_from("<HH", raw, off)
        if code == OPT_ENDOFOPT:
            break
        if off + 4 + length > len(raw):
            raise PcapngFormatError(
                f"option {code} of {length} bytes runs past its block at {where}"
            )
        out[code] = raw[off + 4 : off + 4 + length]
        off += 4 + length + (-length % 4)
    return out


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "backslashreplace")


def _ts_ns(ts: int, resol: int) -> int:
    """A timestamp in units of ``if_tsresol`` as ns: bit 7 clear, 10**-n s; set, 2**-n s."""
    if resol & 0x80:
        return ts * 1_000_000_000 >> (resol & 0x7F)
    unit: int = 10**resol
    return ts * 1_000_000_000 // unit


def _direction(opts: dict[int, bytes]) -> bool | None:
    raw = opts.get(EPB_FLAGS)
    if raw is None or len(raw) != 4:
        return None
    bits = struct.unpack("<I", raw)[0] & 0b11
    return True if bits == FLAG_INBOUND else False if bits == FLAG_OUTBOUND else None


def read_pcapng(data: bytes) -> list[Packet]:
    """The Enhanced Packet Blocks of a little-endian pcapng file (other blocks are
    skipped; each Section Header Block starts a new interface list). Raises
    :class:`PcapngFormatError` (a ValueError) for anything else, never another error."""
    if len(data) < 28 or struct.unpack_from("<I", data)[0] != SHB:
        raise PcapngFormatError("not a pcapng file (no section header block)")
    names: list[str] = []
    resol: list[int] = []
    packets: list[Packet] = []
    off = 0
    while off + 12 <= len(data):
        btype, total = struct.unpack_from("<II", data, off)
        if total < 12 or total % 4 or off + total > len(data):
            raise PcapngFormatError(f"bad block length {total} at offset {off}")
        body = data[off + 8 : off + total - 4]
        if btype == SHB:
            if len(body) < 16 or struct.unpack_from("<I", body)[0] != BYTE_ORDER_MAGIC:
                raise PcapngFormatError("only little-endian pcapng sections are supported")
            names, resol = [], []
        elif btype == IDB:
            if len(body) < 8:
                raise PcapngFormatError(f"interface description block too short at {off}")
            opts = _parse_options(body[8:], off)
            names.append(_text(opts.get(IF_NAME, b"")))
            resol.append((opts.get(IF_TSRESOL) or b"\x06")[0])
        elif btype == EPB:
            if len(body) < 20:
                raise PcapngFormatError(f"enhanced packet block too short at {off}")
            iface, hi, lo, cap, orig = struct.unpack_from("<IIIII", body)
            if iface >= len(names):
                raise PcapngFormatError(f"packet at {off} on undescribed interface {iface}")
            if 20 + cap > len(body):
                raise PcapngFormatError(f"packet at {off}: {cap} captured bytes past the block")
            opts = _parse_options(body[20 + cap + (-cap % 4) :], off)
            ts = _ts_ns((hi << 32) | lo, resol[iface])
            comment = _text(opts.get(OPT_COMMENT, b""))
            packets.append(
                Packet(names[iface], ts, body[20 : 20 + cap], orig, comment, _direction(opts))
            )
        off += total
    return packets


__all__ = ["Packet", "PcapngWriter", "read_pcapng"]
