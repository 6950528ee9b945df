"""pcapng writer/reader round trip (and tshark agrees, where installed)."""

from __future__ import annotations

import io
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import PcapngFormatError
from ringtool.event.records import NetRecords
from ringtool.trace.writers.output_pcap import PcapSink, is_loopback
from ringtool.trace.writers.pcapng import Packet, PcapngWriter, read_pcapng
from tests.helpers.net_records import net_records, net_sample

FRAMES = [
    (b"\xff" * 6 + b"\x02" * 6 + b"\x08\x00" + bytes(range(46)), 60, 1_700_000_000_123_456_789),
    (b"\x01\x02\x03", 1514, 1_700_000_001_000_000_001),  # truncated capture, odd length
]


def _write(stream: io.BytesIO | io.BufferedWriter) -> None:
    w = PcapngWriter(stream, snaplen=96)  # type: ignore[arg-type]
    for i, (data, orig, ts) in enumerate(FRAMES):
        w.write_packet(data, orig, ts, ifname=f"veth{i % 2}", comment=f"cpu={i} pid=42")


def test_round_trip() -> None:
    buf = io.BytesIO()
    _write(buf)
    pkts = read_pcapng(buf.getvalue())
    assert [(p.data, p.orig_len, p.ts_ns) for p in pkts] == FRAMES
    assert [p.ifname for p in pkts] == ["veth0", "veth1"]
    assert pkts[1].comment == "cpu=1 pid=42"
    assert len(buf.getvalue()) % 4 == 0


def test_reader_refuses_garbage() -> None:
    with pytest.raises(ValueError):
        read_pcapng(b"\xd4\xc3\xb2\xa1" + b"\0" * 20)  # classic pcap


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_tshark_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "t.pcapng"
    with open(path, "wb") as f:
        _write(f)
    res = subprocess.run(
        ["tshark", "-r", str(path), "-T", "fields", "-e", "frame.len", "-e", "frame.cap_len",
         "-e", "frame.comment", "-e", "frame.time_epoch"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    rows = [line.split("\t") for line in res.stdout.splitlines()]
    assert [r[:3] for r in rows] == [["60", "60", "cpu=0 pid=42"], ["1514", "3", "cpu=1 pid=42"]]
    assert rows[0][3].startswith("1700000000.123456789")


def _valid() -> bytes:
    buf = io.BytesIO()
    _write(buf)
    return buf.getvalue()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=512))
def test_reader_raises_only_its_error_on_random_bytes(data: bytes) -> None:
    _read_or_format_error(data)
    _read_or_format_error(_valid()[:28] + data)  # a valid section header, then garbage


@settings(max_examples=300, deadline=None)
@given(
    cut=st.integers(0, 400),
    flips=st.lists(st.tuples(st.integers(0, 399), st.integers(0, 255)), max_size=6),
)
def test_reader_raises_only_its_error_on_damaged_files(
    cut: int, flips: list[tuple[int, int]]
) -> None:
    data = bytearray(_valid())
    for pos, value in flips:
        if pos < len(data):
            data[pos] = value
    _read_or_format_error(bytes(data[: cut or len(data)]))


def _read_or_format_error(data: bytes) -> None:
    try:
        pkts = read_pcapng(data)
    except PcapngFormatError:
        return
    assert all(isinstance(p, Packet) for p in pkts)


@settings(max_examples=100, deadline=None)
@given(
    frames=st.lists(
        st.tuples(
            st.binary(max_size=100),
            st.integers(0, 2**63 - 1),
            st.text(max_size=20),
            st.sampled_from([None, True, False]),
        ),
        max_size=5,
    ),
    ifname=st.text(min_size=1, max_size=15),
)
def test_any_written_file_round_trips(
    frames: list[tuple[bytes, int, str, bool | None]], ifname: str
) -> None:
    buf = io.BytesIO()
    w = PcapngWriter(buf)  # type: ignore[arg-type]
    for data, ts, comment, inbound in frames:
        w.write_packet(data, len(data), ts, ifname=ifname, comment=comment, inbound=inbound)
    pkts = read_pcapng(buf.getvalue())
    assert [p.inbound for p in pkts] == [f[3] for f in frames]
    want = ifname.encode("utf-8", "backslashreplace").decode("utf-8", "backslashreplace")
    assert [(p.data, p.ts_ns, p.ifname) for p in pkts] == [(f[0], f[1], want) for f in frames]
    assert [p.comment for p in pkts] == [
        f[2].encode("utf-8", "backslashreplace").decode() for f in frames
    ]


def _directions(path: Path) -> list[str]:
    res = subprocess.run(
        ["tshark", "-r", str(path), "-T", "fields", "-e", "frame.packet_flags_direction"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return res.stdout.split("\n")[:-1]


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark is not installed")
def test_tshark_reads_the_direction_flags(tmp_path: Path) -> None:
    path = tmp_path / "dir.pcapng"
    with open(path, "wb") as f:
        w = PcapngWriter(f, snaplen=96)
        for i, inbound in enumerate((True, False, None)):
            w.write_packet(FRAMES[0][0], 60, FRAMES[0][2] + i, ifname="lo", inbound=inbound)
        w.close()
    # 0x1 inbound, 0x2 outbound; no epb_flags option: no value
    assert _directions(path) == ["0x00000001", "0x00000002", ""]


def _net_event(ifindex: int, direction: str, pid: int = 0) -> NetRecords:
    return net_records([net_sample(
        FRAMES[0][0], ifindex=ifindex, dir=direction, len=60, ts=FRAMES[0][2], cpu=1, pid=pid,
        comm=b"cu\x1b[2Jrl" if pid else b"",
    )])  # fmt: skip


def _packets(*packets: NetRecords) -> NetRecords:
    joined = packets[0]
    for more in packets[1:]:
        joined = joined.concat(more)
    return joined


def test_net_capture_keeps_one_copy_on_loopback(tmp_path: Path) -> None:
    lo = socket.if_nametoindex("lo")
    assert is_loopback("lo")
    missing = 1 + max(i for i, _ in socket.if_nameindex())  # no such interface: not loopback
    cap = PcapSink.open(tmp_path / "c.pcapng", 96, realtime_offset_ns=0)
    cap.write(_packets(_net_event(lo, "egress", pid=42), _net_event(lo, "ingress")))
    cap.write(_packets(_net_event(missing, "egress"), _net_event(missing, "ingress", pid=7)))
    cap.close()
    pkts = read_pcapng((tmp_path / "c.pcapng").read_bytes())
    assert [(p.ifname, p.inbound) for p in pkts] == [
        ("lo", True), (f"if{missing}", False), (f"if{missing}", True),
    ]  # fmt: skip
    assert cap.loopback_skipped == 1
    assert [p.comment for p in pkts] == [
        "cpu=1 ingress", "cpu=1 egress", "cpu=1 ingress pid=7 comm=cu\\x1b[2Jrl",
    ]  # fmt: skip
