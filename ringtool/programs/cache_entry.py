"""One program cache entry: what it takes to load a compiled ``bpf/`` file again
without BCC, as bytes with a checksum (pure: no kernel, no files).

An entry holds, per function, its name, program type, expected attach type, license,
instructions and map relocations (:mod:`ringtool.programs.relocs`); per BCC table, its
name, map type, key/value size, max entries, flags, kernel name, BTF type ids and key/
leaf type descriptions; and the raw BTF blobs the tables' types live in.

Format: ``MAGIC``, the hex sha256 of the payload, a newline, and the payload (JSON;
bytes as base64). :func:`decode` checks all of it: a wrong magic or version, a
checksum mismatch or a field of the wrong type is a :class:`DamagedEntry` (the caller
deletes the entry and compiles again).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ringtool.errors import RingtoolError
from ringtool.programs.relocs import Reloc

#: Bump when the entry's meaning changes (it is part of every key, too).
FORMAT_VERSION = 1
MAGIC = b"ringtool-program-cache 1\n"


class DamagedEntry(RingtoolError):
    """A cache entry that is not what :func:`encode` wrote (the message says how)."""


@dataclass(frozen=True, slots=True)
class FuncEntry:
    """A loadable function (``insns`` as BCC compiled them; ``relocs`` name the maps)."""

    name: str
    prog_type: int
    attach_type: int
    license: str
    insns: bytes
    relocs: tuple[Reloc, ...]


@dataclass(frozen=True, slots=True)
class TableEntry:
    """A BCC table, to be created again (``btf``: index into :attr:`Entry.btfs`, -1:
    none; ``key_desc``/``leaf_desc``: BCC's JSON type descriptions)."""

    name: str
    map_type: int
    key_size: int
    value_size: int
    max_entries: int
    flags: int
    map_name: str
    btf: int
    btf_key_type_id: int
    btf_value_type_id: int
    key_desc: str
    leaf_desc: str


@dataclass(frozen=True, slots=True)
class Entry:
    """A compiled ``bpf/`` file (``source``: its file name)."""

    source: str
    functions: tuple[FuncEntry, ...]
    tables: tuple[TableEntry, ...]
    btfs: tuple[bytes, ...]


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def encode(entry: Entry) -> bytes:
    """``entry`` as the bytes of a cache file (see the module doc)."""
    doc = {
        "format": FORMAT_VERSION,
        "source": entry.source,
        "functions": [
            {
                "name": f.name,
                "prog_type": f.prog_type,
                "attach_type": f.attach_type,
                "license": f.license,
                "insns": _b64(f.insns),
                "relocs": [[r.insn, r.kind, r.target] for r in f.relocs],
            }
            for f in entry.functions
        ],
        "tables": [
            {
                "name": t.name,
                "map_type": t.map_type,
                "key_size": t.key_size,
                "value_size": t.value_size,
                "max_entries": t.max_entries,
                "flags": t.flags,
                "map_name": t.map_name,
                "btf": t.btf,
                "btf_key_type_id": t.btf_key_type_id,
                "btf_value_type_id": t.btf_value_type_id,
                "key_desc": t.key_desc,
                "leaf_desc": t.leaf_desc,
            }
            for t in entry.tables
        ],
        "btfs": [_b64(b) for b in entry.btfs],
    }
    payload = json.dumps(doc, separators=(",", ":")).encode()
    return MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n" + payload


def _get(doc: Any, key: str, kind: type) -> Any:
    if not isinstance(doc, dict) or key not in doc:
        raise DamagedEntry(f"field {key!r} is missing")
    value = doc[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DamagedEntry(f"field {key!r} is not a {kind.__name__}")
    return value


def _bytes(doc: Any, key: str) -> bytes:
    try:
        return base64.b64decode(_get(doc, key, str), validate=True)
    except binascii.Error as exc:
        raise DamagedEntry(f"field {key!r} is not base64") from exc


def _reloc(item: Any) -> Reloc:
    ok = (
        isinstance(item, list)
        and len(item) == 3
        and isinstance(item[0], int)
        and item[1] in ("table", "role")
        and isinstance(item[2], str)
    )
    if not ok:
        raise DamagedEntry(f"relocation {item!r} is not [insn, kind, target]")
    return Reloc(item[0], item[1], item[2])


def _func(d: Any) -> FuncEntry:
    insns = _bytes(d, "insns")
    if not insns or len(insns) % 8:
        raise DamagedEntry(f"function has {len(insns)} bytes of instructions")
    return FuncEntry(
        name=_get(d, "name", str),
        prog_type=_get(d, "prog_type", int),
        attach_type=_get(d, "attach_type", int),
        license=_get(d, "license", str),
        insns=insns,
        relocs=tuple(_reloc(r) for r in _get(d, "relocs", list)),
    )


def _table(d: Any, nbtf: int) -> TableEntry:
    t = TableEntry(
        name=_get(d, "name", str),
        map_type=_get(d, "map_type", int),
        key_size=_get(d, "key_size", int),
        value_size=_get(d, "value_size", int),
        max_entries=_get(d, "max_entries", int),
        flags=_get(d, "flags", int),
        map_name=_get(d, "map_name", str),
        btf=_get(d, "btf", int),
        btf_key_type_id=_get(d, "btf_key_type_id", int),
        btf_value_type_id=_get(d, "btf_value_type_id", int),
        key_desc=_get(d, "key_desc", str),
        leaf_desc=_get(d, "leaf_desc", str),
    )
    if not -1 <= t.btf < nbtf:
        raise DamagedEntry(f"table {t.name} names BTF {t.btf} of {nbtf}")
    return t


def decode(data: bytes) -> Entry:
    """The entry in the bytes of a cache file; :class:`DamagedEntry` unless they are
    exactly what :func:`encode` writes for this :data:`FORMAT_VERSION`."""
    if not data.startswith(MAGIC):
        raise DamagedEntry("it does not start with the cache's magic line")
    rest = data[len(MAGIC) :]
    digest, sep, payload = rest.partition(b"\n")
    if not sep or hashlib.sha256(payload).hexdigest().encode() != digest:
        raise DamagedEntry("its checksum does not match its contents")
    try:
        doc = json.loads(payload)
    except ValueError as exc:
        raise DamagedEntry(f"it is not JSON ({exc})") from exc
    if _get(doc, "format", int) != FORMAT_VERSION:
        raise DamagedEntry(f"format {doc['format']}, not {FORMAT_VERSION}")
    btfs = tuple(base64.b64decode(b) for b in _get(doc, "btfs", list) if isinstance(b, str))
    functions = tuple(_func(f) for f in _get(doc, "functions", list))
    tables = tuple(_table(t, len(btfs)) for t in _get(doc, "tables", list))
    if not functions:
        raise DamagedEntry("it has no function")
    return Entry(source=_get(doc, "source", str), functions=functions, tables=tables, btfs=btfs)


__all__ = ["FORMAT_VERSION", "DamagedEntry", "Entry", "FuncEntry", "TableEntry", "decode", "encode"]
