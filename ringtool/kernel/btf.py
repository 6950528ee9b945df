"""Where a member of a kernel struct lies, from the running kernel's BTF.

BCC compiles the trace sources against kernel headers, and headers need not match the
running kernel's build (a distribution's headers do; a custom kernel's headers from
another configuration do not: on one test host ``offsetof(struct task_struct, comm)``
was 2976 in the headers and 1752 in the kernel). The kernel's own type information,
``/sys/kernel/btf/vmlinux``, is the running build's layout; the verifier checks every
direct load through a BTF pointer against it. So a program that reads a field through
a BTF pointer (``bpf_get_current_task_btf()``) takes its offset from here, as a ``-D``
constant.

The format is the kernel's (Documentation/bpf/btf.rst, "BPF Type Format"): a header,
then the type section (each type a 12-byte ``struct btf_type`` followed by data whose
size depends on its kind) and the string section. Only what finding a struct member
needs is decoded.
"""

from __future__ import annotations

import struct
from functools import lru_cache
from pathlib import Path

VMLINUX_BTF = Path("/sys/kernel/btf/vmlinux")

BTF_MAGIC = 0xEB9F
_KIND_INT, _KIND_PTR, _KIND_ARRAY, _KIND_STRUCT, _KIND_UNION, _KIND_ENUM = 1, 2, 3, 4, 5, 6
_KIND_FUNC_PROTO, _KIND_VAR, _KIND_DATASEC, _KIND_DECL_TAG, _KIND_ENUM64 = 13, 14, 15, 17, 19
_TYPEDEF, _VOLATILE, _CONST, _RESTRICT, _TYPE_TAG = 8, 9, 10, 11, 18


def _extra_bytes(kind: int, vlen: int) -> int:
    """Bytes after a ``struct btf_type`` of ``kind`` with ``vlen`` entries."""
    if kind in (_KIND_INT, _KIND_VAR, _KIND_DECL_TAG):
        return 4
    if kind == _KIND_ARRAY:
        return 12  # struct btf_array
    if kind in (_KIND_STRUCT, _KIND_UNION, _KIND_DATASEC, _KIND_ENUM64):
        return 12 * vlen  # struct btf_member / btf_var_secinfo / btf_enum64
    if kind in (_KIND_ENUM, _KIND_FUNC_PROTO):
        return 8 * vlen  # struct btf_enum / btf_param
    return 0


class BtfError(ValueError):
    """The BTF data is not what the format describes (truncated, bad magic)."""


class Btf:
    """The types of one BTF blob (``data``): ids from 1, as the kernel numbers them."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 24:
            raise BtfError("BTF data shorter than its header")
        magic, _ver, _flags, hdr_len = struct.unpack_from("<HBBI", data, 0)
        if magic != BTF_MAGIC:
            raise BtfError(f"not BTF data (magic {magic:#x})")
        type_off, type_len, str_off, str_len = struct.unpack_from("<IIII", data, 8)
        self._data = data
        self._types_at = hdr_len + type_off
        self._strs_at = hdr_len + str_off
        end = self._types_at + type_len
        if end > len(data) or self._strs_at + str_len > len(data):
            raise BtfError("BTF sections reach past the data")
        offsets: list[int] = [0]  # type id 0 is void
        pos = self._types_at
        while pos < end:
            info = struct.unpack_from("<I", data, pos + 4)[0] if pos + 12 <= end else 0
            after = pos + 12 + _extra_bytes((info >> 24) & 0x1F, info & 0xFFFF)
            if after > end:
                raise BtfError(f"the type at byte {pos} is cut off by its section's end")
            offsets.append(pos)
            pos = after
        self._offsets = offsets
        self._structs: dict[str, int] | None = None  # name -> id, built when first asked

    def name(self, name_off: int) -> str:
        """The string at ``name_off`` of the string section."""
        start = self._strs_at + name_off
        return self._data[start : self._data.index(b"\0", start)].decode(errors="replace")

    def _type(self, type_id: int) -> tuple[int, int, int, int, int]:
        """(position, name_off, kind, vlen, size_or_type) of type ``type_id``."""
        pos = self._offsets[type_id]
        name_off, info, size = struct.unpack_from("<III", self._data, pos)
        return pos, name_off, (info >> 24) & 0x1F, info & 0xFFFF, size

    def find_struct(self, name: str) -> int | None:
        """The id of the struct called ``name`` (the first one with members), or None."""
        if self._structs is None:
            structs: dict[str, int] = {}
            for type_id in range(1, len(self._offsets)):
                _pos, name_off, kind, vlen, _size = self._type(type_id)
                if kind == _KIND_STRUCT and vlen and name_off:
                    structs.setdefault(self.name(name_off), type_id)
            self._structs = structs
        return self._structs.get(name)

    def struct_member(self, struct_name: str, member: str) -> tuple[int, int] | None:
        """:meth:`member` of the struct called ``struct_name`` (:meth:`find_struct`)."""
        sid = self.find_struct(struct_name)
        return None if sid is None else self.member(sid, member)

    def member(self, struct_id: int, member: str) -> tuple[int, int] | None:
        """(byte offset, type id) of ``member``, a direct member of struct
        ``struct_id`` (not a bit field), or None."""
        pos, _name_off, _kind, vlen, _size = self._type(struct_id)
        kflag = struct.unpack_from("<I", self._data, pos + 4)[0] >> 31
        for i in range(vlen):
            name_off, mtype, moff = struct.unpack_from("<III", self._data, pos + 12 + 12 * i)
            if self.name(name_off) != member:
                continue
            bits = moff & 0xFFFFFF if kflag else moff
            if (kflag and moff >> 24) or bits % 8:
                return None  # a bit field
            return bits // 8, mtype
        return None

    def array_of(self, type_id: int) -> tuple[int, int] | None:
        """(element type id, element count) when ``type_id`` is an array (after
        typedefs and qualifiers), else None."""
        type_id = self._resolve(type_id)
        pos, _name_off, kind, _vlen, _size = self._type(type_id)
        if kind != _KIND_ARRAY:
            return None
        elem, _index, nelems = struct.unpack_from("<III", self._data, pos + 12)
        return elem, nelems

    def int_bytes(self, type_id: int) -> int | None:
        """The size of ``type_id`` when it is an integer type (char too), else None."""
        type_id = self._resolve(type_id)
        _pos, _name_off, kind, _vlen, size = self._type(type_id)
        return size if kind == _KIND_INT else None

    def pointee(self, type_id: int) -> int | None:
        """The type a pointer ``type_id`` points to (after typedefs and qualifiers on
        both sides), or None when it is not a pointer."""
        _pos, _name_off, kind, _vlen, target = self._type(self._resolve(type_id))
        return self._resolve(target) if kind == _KIND_PTR else None

    def struct_name(self, type_id: int) -> str | None:
        """The name of struct ``type_id`` (after typedefs), or None: not a struct."""
        _pos, name_off, kind, _vlen, _size = self._type(self._resolve(type_id))
        return self.name(name_off) if kind == _KIND_STRUCT else None

    def size_of(self, type_id: int) -> int | None:
        """The byte size of an integer, struct, pointer (8: a 64-bit kernel's, as BPF's)
        or array of those ``type_id`` (after typedefs), else None."""
        _pos, _name_off, kind, _vlen, size = self._type(self._resolve(type_id))
        if kind == _KIND_PTR:
            return 8
        if (arr := self.array_of(type_id)) is not None:
            elem = self.size_of(arr[0])
            return None if elem is None else elem * arr[1]
        return size if kind in (_KIND_INT, _KIND_STRUCT) else None

    def _resolve(self, type_id: int) -> int:
        for _ in range(32):  # typedef/qualifier chains are short; no cycles in BTF
            _pos, _name_off, kind, _vlen, target = self._type(type_id)
            if kind not in (_TYPEDEF, _VOLATILE, _CONST, _RESTRICT, _TYPE_TAG):
                return type_id
            type_id = target
        return type_id


@lru_cache(maxsize=4)
def _vmlinux(path: Path) -> Btf | None:
    try:
        return Btf(path.read_bytes())
    except (OSError, BtfError):
        return None


def char_array_offset(struct_name: str, member: str, length: int,
                      path: Path = VMLINUX_BTF) -> int | None:  # fmt: skip
    """The byte offset of ``member``, a ``char[length]`` directly in struct
    ``struct_name``, in the running kernel (``path``: its BTF); None when the kernel
    has no BTF or the member is not such an array."""
    btf = _vmlinux(path)
    if btf is None:
        return None
    found = btf.struct_member(struct_name, member)
    if found is None:
        return None
    offset, mtype = found
    arr = btf.array_of(mtype)
    if arr is None or arr[1] != length or btf.int_bytes(arr[0]) != 1:
        return None
    return offset


def field_offsets(steps: list[str], size: int, path: Path = VMLINUX_BTF) -> list[int] | None:
    """The byte offsets of a chain of direct members, ``steps`` as ``"struct.member"``
    (for instance ``["task_struct.cred", "cred.uid"]``), in the running kernel: every
    member but the last must be a pointer to the next step's struct, the last one an
    integer or struct of ``size`` bytes. None when the kernel has no BTF or any step
    does not hold."""
    btf = _vmlinux(path)
    if btf is None:
        return None
    offsets = []
    for i, step in enumerate(steps):
        struct_name, _, member = step.partition(".")
        found = btf.struct_member(struct_name, member)
        if found is None:
            return None
        offset, mtype = found
        if i + 1 < len(steps):
            to = btf.pointee(mtype)
            if to is None or btf.struct_name(to) != steps[i + 1].partition(".")[0]:
                return None
        elif btf.size_of(mtype) != size:
            return None
        offsets.append(offset)
    return offsets


__all__ = ["VMLINUX_BTF", "Btf", "BtfError", "char_array_offset", "field_offsets"]
