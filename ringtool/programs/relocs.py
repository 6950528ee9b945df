"""The map references in compiled BPF instructions, found and patched (pure bytes).

After BCC compiles a program, every map it names is a ``ld_imm64`` (opcode 0x18, two
8-byte slots) with ``src_reg`` BPF_PSEUDO_MAP_FD (1) whose ``imm`` is a map fd of this
process: one of BCC's tables, or a map ringtool made and passed as a ``-D *_FD``
constant (a *role*: ``RT_PCPU_RINGS_FD``, ``TRACE_CONFIG_FD``, ...).
:func:`find_relocs` names each such instruction by table or role, so that
:func:`patch` can write the fds of another process's maps into a copy.

A program is not cacheable (:class:`NotCacheable`) when it holds a reference this
cannot move: another pseudo ``src_reg`` in a ``ld_imm64`` (2 map value, 3 BTF id,
4 pseudo func, 5/6 map index), a kfunc call (``call`` with ``src_reg`` 2), or an fd
that is neither a table nor a role. Instruction layout: include/uapi/linux/bpf.h
``struct bpf_insn`` (code u8, dst_reg:4 src_reg:4, off s16, imm s32, little-endian).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ringtool.errors import RingtoolError

INSN = 8
LD_IMM64 = 0x18
CALL = 0x85
PSEUDO_MAP_FD = 1
PSEUDO_KFUNC_CALL = 2

RelocKind = Literal["table", "role"]


class NotCacheable(RingtoolError):
    """A program holds a reference the cache cannot move to another process."""


@dataclass(frozen=True, slots=True)
class Reloc:
    """Instruction ``insn`` (index of the ``ld_imm64``'s first slot) refers to the map
    ``target``: a BCC table's name (``kind`` "table") or a ``-D`` name (``"role"``)."""

    insn: int
    kind: RelocKind
    target: str


def _fields(insns: bytes, i: int) -> tuple[int, int, int]:
    code, regs, _off, imm = struct.unpack_from("<BBhi", insns, i * INSN)
    return code, regs >> 4, imm


def find_relocs(
    insns: bytes, tables: Mapping[int, str], roles: Mapping[int, str]
) -> tuple[Reloc, ...]:
    """Every map reference of ``insns`` named by ``tables`` (fd -> table name) or
    ``roles`` (fd -> ``-D`` name); :class:`NotCacheable` for anything else (see the
    module doc) and for a length not a multiple of 8 or a cut ``ld_imm64``."""
    if len(insns) % INSN:
        raise NotCacheable(f"{len(insns)} bytes of instructions is not a multiple of 8")
    count = len(insns) // INSN
    out: list[Reloc] = []
    i = 0
    while i < count:
        code, src, imm = _fields(insns, i)
        if code == CALL and src == PSEUDO_KFUNC_CALL:
            raise NotCacheable(f"instruction {i} calls a kernel function (kfunc)")
        if code != LD_IMM64:
            i += 1
            continue
        if i + 1 >= count:
            raise NotCacheable(f"instruction {i} is a ld_imm64 without its second slot")
        if src == PSEUDO_MAP_FD:
            if imm in tables:
                out.append(Reloc(i, "table", tables[imm]))
            elif imm in roles:
                out.append(Reloc(i, "role", roles[imm]))
            else:
                raise NotCacheable(f"instruction {i} names map fd {imm}, not a table or a role")
        elif src != 0:
            raise NotCacheable(f"instruction {i} is a ld_imm64 with src_reg {src}")
        i += 2
    return tuple(out)


def patch(insns: bytes, relocs: tuple[Reloc, ...], fds: Mapping[tuple[str, str], int]) -> bytes:
    """A copy of ``insns`` with each reloc's ``imm`` set to ``fds[(kind, target)]``;
    :class:`NotCacheable` when a reloc's instruction is no map ``ld_imm64`` or its map
    has no fd in ``fds`` (a damaged entry)."""
    out = bytearray(insns)
    for r in relocs:
        if not 0 <= r.insn < len(insns) // INSN - 1:
            raise NotCacheable(f"relocation at instruction {r.insn} is outside the program")
        code, src, _imm = _fields(insns, r.insn)
        if code != LD_IMM64 or src != PSEUDO_MAP_FD:
            raise NotCacheable(f"relocation at instruction {r.insn} is not a map ld_imm64")
        fd = fds.get((r.kind, r.target))
        if fd is None:
            raise NotCacheable(f"no map for {r.kind} {r.target}")
        struct.pack_into("<i", out, r.insn * INSN + 4, fd)
    return bytes(out)


__all__ = ["NotCacheable", "Reloc", "find_relocs", "patch"]
