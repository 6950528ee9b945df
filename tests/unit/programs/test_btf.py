"""ringtool.kernel.btf on hand-built BTF blobs (the kernel's format, Documentation/bpf/
btf.rst) and on the running kernel's."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from ringtool.kernel.btf import VMLINUX_BTF, Btf, BtfError, char_array_offset, field_offsets

INT, PTR, ARRAY, STRUCT, ENUM, TYPEDEF, CONST, FUNC_PROTO = 1, 2, 3, 4, 6, 8, 10, 13


class Blob:
    """Types appended one by one (ids from 1), strings interned."""

    def __init__(self) -> None:
        self.types = b""
        self.strs = b"\0"
        self.count = 0

    def s(self, name: str) -> int:
        if not name:
            return 0
        off = len(self.strs)
        self.strs += name.encode() + b"\0"
        return off

    def add(self, name: str, kind: int, vlen: int, size: int, extra: bytes = b"",
            kflag: int = 0) -> int:  # fmt: skip
        info = kflag << 31 | kind << 24 | vlen
        self.types += struct.pack("<III", self.s(name), info, size) + extra
        self.count += 1
        return self.count

    def integer(self, name: str, size: int) -> int:
        return self.add(name, INT, 0, size, struct.pack("<I", size * 8))

    def array(self, elem: int, n: int) -> int:
        return self.add("", ARRAY, 0, 0, struct.pack("<III", elem, elem, n))

    def struct(self, name: str, size: int, members: list[tuple[str, int, int]],
               kflag: int = 0) -> int:  # fmt: skip
        extra = b"".join(struct.pack("<III", self.s(m), t, off) for m, t, off in members)
        return self.add(name, STRUCT, len(members), size, extra, kflag)

    def data(self, magic: int = 0xEB9F) -> bytes:
        hdr = struct.pack("<HBBIIIII", magic, 1, 0, 24, 0, len(self.types),
                          len(self.types), len(self.strs))  # fmt: skip
        return hdr + self.types + self.strs


def task_like(blob: Blob, comm_len: int = 16) -> None:
    """Types before task_struct of every kind whose size the walk must know."""
    char = blob.integer("char", 1)
    i32 = blob.integer("int", 4)
    blob.add("", PTR, 0, char)
    blob.add("e", ENUM, 2, 4, struct.pack("<iIiI", blob.s("A"), 0, blob.s("B"), 1))
    blob.add("", FUNC_PROTO, 2, i32, struct.pack("<IIII", 0, i32, 0, char))
    blob.struct("task_struct", 0, [])  # a forward-like empty one first: skipped
    const_char = blob.add("", CONST, 0, char)
    typedef = blob.add("comm_t", TYPEDEF, 0, blob.array(const_char, comm_len))
    blob.struct("task_struct", 2000, [("pid", i32, 64 * 8), ("comm", typedef, 1752 * 8)])


def test_the_offset_of_a_char_array_member(tmp_path: Path) -> None:
    blob = Blob()
    task_like(blob)
    path = tmp_path / "btf"
    path.write_bytes(blob.data())
    assert char_array_offset("task_struct", "comm", 16, path) == 1752
    assert char_array_offset("task_struct", "comm", 32, path) is None  # another length
    assert char_array_offset("task_struct", "pid", 4, path) is None  # not an array
    assert char_array_offset("task_struct", "nothing", 16, path) is None
    assert char_array_offset("mm_struct", "comm", 16, path) is None


def test_bit_fields_and_kflag_offsets(tmp_path: Path) -> None:
    blob = Blob()
    char = blob.integer("char", 1)
    arr = blob.array(char, 16)
    # kflag: the offset's low 24 bits, a bit field size in the high 8 (0: not one)
    blob.struct("a", 64, [("comm", arr, 8 * 8), ("bits", char, 3 << 24 | 16 * 8)], kflag=1)
    btf = Btf(blob.data())
    sid = btf.find_struct("a")
    assert sid is not None
    assert btf.member(sid, "comm") == (8, arr)
    assert btf.member(sid, "bits") is None


@pytest.mark.parametrize("cut", [0, 10, 23])
def test_truncated_or_foreign_data_is_refused(tmp_path: Path, cut: int) -> None:
    blob = Blob()
    task_like(blob)
    with pytest.raises(BtfError):
        Btf(blob.data()[:cut])
    with pytest.raises(BtfError, match="magic"):
        Btf(blob.data(magic=0x1234))
    with pytest.raises(BtfError, match="past"):
        Btf(blob.data()[:-4])  # the string section cut short
    data = bytearray(blob.data())
    struct.pack_into("<I", data, 12, len(blob.types) - 4)  # the type section cut short
    with pytest.raises(BtfError, match="cut off"):
        Btf(bytes(data))
    path = tmp_path / "bad"
    path.write_bytes(b"\0" * 64)
    assert char_array_offset("task_struct", "comm", 16, path) is None  # not an error


@pytest.mark.skipif(not VMLINUX_BTF.exists(), reason="this kernel has no BTF")
def test_the_running_kernel_has_a_task_comm() -> None:
    off = char_array_offset("task_struct", "comm", 16)
    assert off is not None and 0 < off < 16384


def test_a_chain_of_pointer_members(tmp_path: Path) -> None:
    blob = Blob()
    u32 = blob.integer("unsigned int", 4)
    kuid = blob.add("kuid_t", TYPEDEF, 0, blob.struct("", 4, [("val", u32, 0)]))
    cred = blob.struct("cred", 64, [("usage", u32, 0), ("uid", kuid, 8 * 8), ("gid", u32, 12 * 8)])
    cred_ptr = blob.add("", PTR, 0, blob.add("", CONST, 0, cred))
    other = blob.struct("other", 8, [("x", u32, 0)])
    blob.struct("task_struct", 4096, [("cred", cred_ptr, 1736 * 8), ("real_cred", other, 8 * 8)])
    path = tmp_path / "btf"
    path.write_bytes(blob.data())
    assert field_offsets(["task_struct.cred", "cred.uid"], 4, path) == [1736, 8]
    assert field_offsets(["task_struct.cred", "cred.gid"], 4, path) == [1736, 12]
    assert field_offsets(["task_struct.cred", "cred.uid"], 8, path) is None  # size
    assert field_offsets(["task_struct.cred", "other.x"], 4, path) is None  # pointee
    assert field_offsets(["task_struct.real_cred", "cred.uid"], 4, path) is None  # no ptr
    assert field_offsets(["task_struct.cred", "cred.euid"], 4, path) is None
    assert field_offsets(["task_struct.cred", "cred.uid"], 4, tmp_path / "none") is None


def test_a_pointer_or_array_member_has_its_size(tmp_path: Path) -> None:
    """A member read by address may be a pointer (8 bytes) or an array (the elements'
    bytes): the cpuwait source reads task_struct.group_leader and task_struct.comm."""
    blob = Blob()
    task_like(blob)
    leader_ptr = blob.add("", PTR, 0, 1)
    blob.struct("signal_struct", 16, [("leader", leader_ptr, 8 * 8)])
    path = tmp_path / "btf"
    path.write_bytes(blob.data())
    assert field_offsets(["task_struct.comm"], 16, path) == [1752]
    assert field_offsets(["task_struct.comm"], 8, path) is None
    assert field_offsets(["signal_struct.leader"], 8, path) == [8]
    assert field_offsets(["signal_struct.leader"], 4, path) is None
