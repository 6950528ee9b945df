"""KMES format: metadata page and event header bytes are exactly docs/kmes.md sections
3 and 4."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ringtool.errors import KmesCapacityError, KmesError, KmesFormatError
from ringtool.kmes import layout as L
from ringtool.kmes.config import parse_size, resolve_capacity


def test_metadata_page_bytes_exact() -> None:
    page = bytearray(b"\xff" * 4096)
    L.init_metadata(page, cpu_id=3, capacity=1 << 16, generation=1)
    assert page[0:8] == b"\x4b\x4d\x45\x53\x52\x49\x4e\x47"  # KMESRING
    assert page[8:12] == (1).to_bytes(4, "little")  # version
    assert page[12:14] == (3).to_bytes(2, "little")  # cpu_id
    assert page[14:16] == b"\0\0"  # reserved0
    assert page[16:24] == (1 << 16).to_bytes(8, "little")  # capacity
    assert page[24:32] == (4096).to_bytes(8, "little")  # data_offset
    assert page[32:40] == (1).to_bytes(8, "little")  # generation
    assert page[40:64] == bytes(24)  # reserved1
    assert page[64:80] == bytes(16)  # write_pos, tail_pos
    assert page[80:128] == bytes(48)  # reserved2
    assert page[128:133] == bytes(5)  # futex_counter, need_wake
    assert page[133:4096] == bytes(4096 - 133)  # reserved3 + rest of the page


def test_offsets_and_word_indexes() -> None:
    assert (L.OFF_WRITE_POS, L.OFF_TAIL_POS) == (64, 72)
    assert (L.OFF_FUTEX_COUNTER, L.OFF_NEED_WAKE) == (128, 132)
    assert L.Q_WRITE_POS * 8 == 64 and L.Q_TAIL_POS * 8 == 72 and L.Q_GENERATION * 8 == 32
    assert L.I_FUTEX_COUNTER * 4 == 128
    page = bytearray(4096)
    L.init_metadata(page, cpu_id=0, capacity=4096, generation=7)
    mv = memoryview(page)
    assert mv.cast("Q")[L.Q_GENERATION] == 7


def test_read_static_roundtrip_and_rejects() -> None:
    page = bytearray(4096)
    L.init_metadata(page, cpu_id=5, capacity=1 << 20, generation=2)
    st = L.read_static(page)
    assert (st.cpu_id, st.capacity, st.data_offset, st.generation) == (5, 1 << 20, 4096, 2)
    bad = bytearray(page)
    bad[0] = ord("X")
    with pytest.raises(KmesFormatError, match="magic"):
        L.read_static(bad)
    bad = bytearray(page)
    bad[8] = 2
    with pytest.raises(KmesFormatError, match="version"):
        L.read_static(bad)
    bad = bytearray(page)
    struct.pack_into("<Q", bad, 16, 5000)
    with pytest.raises(KmesFormatError):
        L.read_static(bad)


def test_event_header_bytes_exact() -> None:
    buf = bytearray(b"\xee" * 64)
    size = L.pack_event(
        buf,
        0,
        event_type=0x1234,
        origin_class=2,
        timestamp=0x1122334455667788,
        seq=9,
        cpu_id=3,
        payload=b"abcde",
    )
    assert size == 40  # 32 + 5 -> 40
    expect = (
        (40).to_bytes(4, "little")
        + (0x1234).to_bytes(2, "little")
        + bytes([2, 0])
        + (0x1122334455667788).to_bytes(8, "little")
        + (9).to_bytes(8, "little")
        + (3).to_bytes(2, "little")
        + b"\0\0"
        + (5).to_bytes(4, "little")
        + b"abcde\0\0\0"
    )
    assert bytes(buf[:40]) == expect
    assert buf[40:] == b"\xee" * 24
    n, ev = L.unpack_event(buf)
    assert n == 40 and ev == L.Event(0x1234, 2, 0, 0x1122334455667788, 9, 3, b"abcde")


@pytest.mark.parametrize("plen,size", [(0, 32), (1, 40), (8, 40), (9, 48), (64, 96)])
def test_event_size_multiple_of_8(plen: int, size: int) -> None:
    assert L.event_size(plen) == size


def test_unpack_rejects_bad_sizes() -> None:
    buf = bytearray(64)
    L.EVENT_HEADER.pack_into(buf, 0, 36, 1, 1, 0, 0, 1, 0, 0, 0)
    with pytest.raises(KmesFormatError):
        L.unpack_event(buf)
    L.EVENT_HEADER.pack_into(buf, 0, 32, 1, 1, 0, 0, 1, 0, 0, 8)
    with pytest.raises(KmesFormatError):
        L.unpack_event(buf)


@pytest.mark.parametrize("cap", [0, 3, 4095, 6000, 1 << 11, 1 << 31, -4096])
def test_capacity_rejected(cap: int) -> None:
    with pytest.raises(KmesCapacityError):
        L.check_capacity(cap)


def test_capacity_accepted() -> None:
    assert L.check_capacity(L.MIN_CAPACITY) == L.MIN_CAPACITY
    assert L.check_capacity(L.MAX_CAPACITY) == L.MAX_CAPACITY


def test_config(tmp_path: Path) -> None:
    assert parse_size("1M") == 1 << 20 and parse_size("64k") == 1 << 16
    assert parse_size("4096") == 4096 and parse_size("2MiB") == 2 << 20
    conf = tmp_path / "kmes.conf"
    assert resolve_capacity(None, conf) == L.DEFAULT_CAPACITY  # no file: default
    conf.write_text("# comment\ncapacity = 262144  # 256 KiB\n")
    assert resolve_capacity(None, conf) == 262144
    assert resolve_capacity(8192, conf) == 8192  # explicit wins
    conf.write_text("capacity = 3000\n")
    with pytest.raises(KmesCapacityError, match=r"kmes\.conf"):
        resolve_capacity(None, conf)
    conf.write_text("capacity\n")
    with pytest.raises(KmesError, match="line 1 is not"):
        resolve_capacity(None, conf)
    conf.write_text("capacity = SECRET\n")  # the value is not echoed: say where, not what
    with pytest.raises(KmesCapacityError, match=r"kmes\.conf: the capacity is not a size") as e:
        resolve_capacity(None, conf)
    assert "SECRET" not in str(e.value)
