"""The program cache's pure parts on hand-built instructions and entries: map
references found and patched (ringtool.programs.relocs), entries encoded, decoded and
refused when damaged (ringtool.programs.cache_entry), and the key's parts."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.kernel.needs import NO_NEEDS, KernelNeeds
from ringtool.programs.cache_entry import (
    MAGIC,
    DamagedEntry,
    Entry,
    FuncEntry,
    TableEntry,
    decode,
    encode,
)
from ringtool.programs.cache_store import ProgramStore, cache_key
from ringtool.programs.relocs import NotCacheable, Reloc, find_relocs, patch


def insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    """One struct bpf_insn (include/uapi/linux/bpf.h)."""
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def ld_map(fd: int, src: int = 1, dst: int = 1) -> bytes:
    """``r<dst> = map fd`` as clang emits it: a two-slot ld_imm64."""
    return insn(0x18, dst, src, 0, fd) + insn(0, 0, 0, 0, 0)


MOV_R0_0 = insn(0xB7, 0, 0, 0, 0)
EXIT = insn(0x95)
CALL_LOOKUP = insn(0x85, 0, 0, 0, 1)  # bpf_map_lookup_elem


def program() -> bytes:
    return ld_map(7) + CALL_LOOKUP + ld_map(12, dst=2) + MOV_R0_0 + ld_map(7) + EXIT


def test_relocations_name_tables_and_roles() -> None:
    relocs = find_relocs(program(), {7: "drops"}, {12: "RT_PCPU_RINGS_FD"})
    assert relocs == (
        Reloc(0, "table", "drops"),
        Reloc(3, "role", "RT_PCPU_RINGS_FD"),
        Reloc(6, "table", "drops"),
    )


def test_patch_writes_the_new_fds_and_nothing_else() -> None:
    code = program()
    relocs = find_relocs(code, {7: "drops"}, {12: "RT_PCPU_RINGS_FD"})
    out = patch(code, relocs, {("table", "drops"): 40, ("role", "RT_PCPU_RINGS_FD"): 41})
    assert out == ld_map(40) + CALL_LOOKUP + ld_map(41, dst=2) + MOV_R0_0 + ld_map(40) + EXIT


@pytest.mark.parametrize(
    ("code", "why"),
    [
        (ld_map(9) + EXIT, "map fd 9"),  # an fd that is neither a table nor a role
        (ld_map(7, src=2) + EXIT, "src_reg 2"),  # BPF_PSEUDO_MAP_VALUE
        (ld_map(7, src=4) + EXIT, "src_reg 4"),  # BPF_PSEUDO_FUNC
        (insn(0x85, 0, 2, 0, 55) + EXIT, "kfunc"),
        (MOV_R0_0 + insn(0x18, 1, 1, 0, 7), "second slot"),
        (MOV_R0_0[:5], "multiple of 8"),
    ],
)
def test_what_cannot_move_is_not_cached(code: bytes, why: str) -> None:
    with pytest.raises(NotCacheable, match=why):
        find_relocs(code, {7: "drops"}, {})


def test_patch_refuses_a_reloc_that_is_no_map_load() -> None:
    with pytest.raises(NotCacheable, match="not a map ld_imm64"):
        patch(MOV_R0_0 + ld_map(7), (Reloc(0, "table", "drops"),), {("table", "drops"): 3})
    with pytest.raises(NotCacheable, match="no map for table other"):
        patch(ld_map(7), (Reloc(0, "table", "other"),), {("table", "drops"): 3})
    with pytest.raises(NotCacheable, match="outside"):
        patch(ld_map(7), (Reloc(5, "table", "drops"),), {("table", "drops"): 3})


@given(st.lists(st.integers(0, 3), min_size=1, max_size=40), st.integers(3, 2**31 - 8))
def test_find_then_patch_puts_each_map_where_it_was(kinds: list[int], new_fd: int) -> None:
    """Any mix of plain instructions and map loads: patching with each map's new fd
    changes exactly the imm of its loads."""
    code, want = b"", b""
    for k in kinds:
        if k == 0:
            code, want = code + MOV_R0_0, want + MOV_R0_0
        else:
            code, want = code + ld_map(k), want + ld_map(new_fd + k)
    relocs = find_relocs(code, {1: "a", 2: "b"}, {3: "X_FD"})
    fds = {("table", "a"): new_fd + 1, ("table", "b"): new_fd + 2, ("role", "X_FD"): new_fd + 3}
    assert patch(code, relocs, fds) == want


def entry() -> Entry:
    code = program()
    return Entry(
        source="trace_open.c",
        functions=(
            FuncEntry(
                "tracepoint__syscalls__sys_enter_openat",
                5,
                0,
                "GPL",
                code,
                find_relocs(code, {7: "drops"}, {12: "RT_PCPU_RINGS_FD"}),
            ),
        ),
        tables=(
            TableEntry(
                "drops", 6, 4, 8, 1, 0, "drops", -1, 0, 0, '"unsigned int"', '"unsigned long long"'
            ),
            TableEntry("inflight", 29, 4, 48, 0, 1, "inflight", 0, 1, 5, '"int"', '["x"]'),
        ),
        btfs=(b"\x9f\xeb\x01\x00fake btf",),
    )


def test_an_entry_decodes_to_itself() -> None:
    assert decode(encode(entry())) == entry()


def test_a_changed_byte_is_a_damaged_entry() -> None:
    data = bytearray(encode(entry()))
    for at in (len(MAGIC) + 70, len(data) - 3, len(data) // 2):
        bad = bytearray(data)
        bad[at] ^= 0x01
        with pytest.raises(DamagedEntry):
            decode(bytes(bad))


@pytest.mark.parametrize(
    "data",
    [b"", b"garbage", MAGIC, MAGIC + b"00\n{}", encode(entry())[:-1]],
)
def test_truncated_or_foreign_bytes_are_damaged(data: bytes) -> None:
    with pytest.raises(DamagedEntry):
        decode(data)


def test_a_well_checksummed_entry_with_a_bad_field_is_damaged() -> None:
    """A file whose checksum is right but whose fields are not (another writer, or a
    future format) is refused by field, never loaded half-read."""
    import hashlib
    import json

    doc = json.loads(encode(entry()).split(b"\n", 2)[2])
    doc["tables"][1]["btf"] = 4  # names a BTF blob the entry does not have
    payload = json.dumps(doc).encode()
    with pytest.raises(DamagedEntry, match="BTF 4"):
        decode(MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload)


def test_the_key_changes_with_each_part_but_not_with_fd_values() -> None:
    base = cache_key("trace_open.c", {"TRACE_FILTER_PID": 1, "RT_PCPU_RINGS_FD": 5}, NO_NEEDS)
    same = cache_key("trace_open.c", {"RT_PCPU_RINGS_FD": 9, "TRACE_FILTER_PID": 1}, NO_NEEDS)
    assert base == same  # an fd is patched at load: its value is not part of the key
    others = [
        cache_key("trace_exec.c", {"TRACE_FILTER_PID": 1, "RT_PCPU_RINGS_FD": 5}, NO_NEEDS),
        cache_key("trace_open.c", {"RT_PCPU_RINGS_FD": 5}, NO_NEEDS),
        cache_key("trace_open.c", {"TRACE_FILTER_PID": 2, "RT_PCPU_RINGS_FD": 5}, NO_NEEDS),
        cache_key("trace_open.c", {"TRACE_FILTER_PID": 1, "RT_PCPU_RINGS_FD": 5},
                  KernelNeeds(task_storage=True)),
        cache_key("trace_open.c", {"TRACE_FILTER_PID": 1, "RT_PCPU_RINGS_FD": 5}, NO_NEEDS,
                  kernel="6.1.0-other #1 SMP x86_64"),
        cache_key("trace_open.c", {"TRACE_FILTER_PID": 1, "RT_PCPU_RINGS_FD": 5}, NO_NEEDS,
                  version="99.0"),
    ]  # fmt: skip
    assert len({base, *others}) == len(others) + 1


def test_a_stores_key_follows_a_source_changed_while_it_is_open(tmp_path: Path) -> None:
    bpf = tmp_path / "bpf"
    bpf.mkdir()
    source = bpf / "trace_open.c"
    source.write_text("int a;\n")
    store = ProgramStore(str(tmp_path / "cache"), bpf=bpf)
    first = store.key("trace_open.c", {}, NO_NEEDS)
    assert store.key("trace_open.c", {}, NO_NEEDS) == first
    assert first == cache_key("trace_open.c", {}, NO_NEEDS, bpf=bpf)
    source.write_text("int b;\n")  # the same size, written in place
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 1))
    changed = store.key("trace_open.c", {}, NO_NEEDS)
    assert changed != first and changed == cache_key("trace_open.c", {}, NO_NEEDS, bpf=bpf)
    (bpf / "trace_event.h").write_text("#define X 1\n")  # a header added
    assert store.key("trace_open.c", {}, NO_NEEDS) not in (first, changed)
