"""bpf(2): just the commands ringtool needs, over a zeroed ``union bpf_attr``.

Layouts follow include/uapi/linux/bpf.h. Every failure raises
:class:`ringtool.errors.BpfSyscallError` (or :class:`PrivilegeError` for EPERM).
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from ringtool.errors import BpfSyscallError, PrivilegeError
from ringtool.kernel.cpus import possible_cpu_count
from ringtool.kernel.libc import raw_syscall

_ATTR_SIZE = 144  # larger than every attr variant used here; the kernel zero-checks the tail


class Cmd(IntEnum):
    MAP_CREATE = 0
    MAP_LOOKUP_ELEM = 1
    MAP_UPDATE_ELEM = 2
    MAP_DELETE_ELEM = 3
    MAP_GET_NEXT_KEY = 4
    PROG_LOAD = 5
    OBJ_PIN = 6
    OBJ_GET = 7
    PROG_TEST_RUN = 10
    OBJ_GET_INFO_BY_FD = 15
    RAW_TRACEPOINT_OPEN = 17
    BTF_LOAD = 18
    BTF_GET_FD_BY_ID = 19
    MAP_LOOKUP_BATCH = 24
    MAP_UPDATE_BATCH = 26
    ENABLE_STATS = 32


class MapType(IntEnum):
    """enum bpf_map_type (the ones ringtool names)."""

    HASH = 1
    ARRAY = 2
    PERF_EVENT_ARRAY = 4
    PERCPU_HASH = 5
    PERCPU_ARRAY = 6
    LRU_HASH = 9
    ARRAY_OF_MAPS = 12
    HASH_OF_MAPS = 13
    RINGBUF = 27
    USER_RINGBUF = 31


BPF_ANY = 0
BPF_F_TEST_RUN_ON_CPU = 1 << 0


def bpf_call(cmd: Cmd, attr: ctypes.Array[ctypes.c_char], *, what: str = "") -> int:
    """bpf(cmd, attr): the result (an fd for the commands that make one); a
    BpfSyscallError naming ``what`` (PrivilegeError for EPERM) on failure."""
    res, err = raw_syscall("bpf", ctypes.c_int(cmd), attr, ctypes.c_uint(_ATTR_SIZE))
    if res < 0:
        if err == errno.EPERM:
            raise PrivilegeError(
                f"bpf({cmd.name}) refused (EPERM): needs root or CAP_BPF+CAP_PERFMON; run with sudo"
            )
        raise BpfSyscallError(cmd.name, err, what)
    return res


def make_attr(
    fmt_fields: list[tuple[int, ctypes._SimpleCData[Any]]],
) -> ctypes.Array[ctypes.c_char]:
    """A zeroed ``union bpf_attr`` with each ``(offset, value)`` written at its offset."""
    buf = ctypes.create_string_buffer(_ATTR_SIZE)
    for offset, value in fmt_fields:
        ctypes.memmove(ctypes.addressof(buf) + offset, ctypes.byref(value), ctypes.sizeof(value))
    return buf


def map_create(
    map_type: MapType,
    *,
    key_size: int,
    value_size: int,
    max_entries: int,
    flags: int = 0,
    inner_map_fd: int = 0,
) -> int:
    """BPF_MAP_CREATE; returns the new map's fd (the caller closes it)."""
    attr = make_attr(
        [
            (0, ctypes.c_uint32(map_type)),
            (4, ctypes.c_uint32(key_size)),
            (8, ctypes.c_uint32(value_size)),
            (12, ctypes.c_uint32(max_entries)),
            (16, ctypes.c_uint32(flags)),
            (20, ctypes.c_uint32(inner_map_fd)),
        ]
    )
    return bpf_call(Cmd.MAP_CREATE, attr, what=f"{map_type.name} max_entries={max_entries}")


class _MapInfo(ctypes.Structure):
    _fields_ = (
        ("type", ctypes.c_uint32),
        ("id", ctypes.c_uint32),
        ("key_size", ctypes.c_uint32),
        ("value_size", ctypes.c_uint32),
        ("max_entries", ctypes.c_uint32),
        ("map_flags", ctypes.c_uint32),
        ("name", ctypes.c_char * 16),
        ("ifindex", ctypes.c_uint32),
        ("btf_vmlinux_value_type_id", ctypes.c_uint32),
        ("netns_dev", ctypes.c_uint64),
        ("netns_ino", ctypes.c_uint64),
        ("btf_id", ctypes.c_uint32),
        ("btf_key_type_id", ctypes.c_uint32),
        ("btf_value_type_id", ctypes.c_uint32),
        ("_rest", ctypes.c_char * 28),
    )


@dataclass(frozen=True, slots=True)
class MapInfo:
    """What the kernel says about a map fd (struct bpf_map_info); ``btf_id`` 0: the map
    has no BTF (else its key's and value's type ids in that BTF object)."""

    type: int
    id: int
    key_size: int
    value_size: int
    max_entries: int
    flags: int
    name: str
    btf_id: int = 0
    btf_key_type_id: int = 0
    btf_value_type_id: int = 0

    @property
    def type_name(self) -> str:
        try:
            return MapType(self.type).name
        except ValueError:
            return f"type {self.type}"


def map_info(fd: int) -> MapInfo:
    """BPF_OBJ_GET_INFO_BY_FD on a map fd."""
    info = _MapInfo()
    attr = make_attr(
        [
            (0, ctypes.c_uint32(fd)),
            (4, ctypes.c_uint32(ctypes.sizeof(info))),
            (8, ctypes.c_uint64(ctypes.addressof(info))),
        ]
    )
    bpf_call(Cmd.OBJ_GET_INFO_BY_FD, attr, what=f"fd {fd} (is it a BPF map?)")
    return MapInfo(
        type=info.type,
        id=info.id,
        key_size=info.key_size,
        value_size=info.value_size,
        max_entries=info.max_entries,
        flags=info.map_flags,
        name=info.name.decode(errors="replace"),
        btf_id=info.btf_id,
        btf_key_type_id=info.btf_key_type_id,
        btf_value_type_id=info.btf_value_type_id,
    )


def map_update(fd: int, key: bytes, value: bytes, flags: int = BPF_ANY) -> None:
    """BPF_MAP_UPDATE_ELEM with raw key/value bytes."""
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value, len(value))
    attr = make_attr(
        [
            (0, ctypes.c_uint32(fd)),
            (8, ctypes.c_uint64(ctypes.addressof(k))),
            (16, ctypes.c_uint64(ctypes.addressof(v))),
            (24, ctypes.c_uint64(flags)),
        ]
    )
    bpf_call(Cmd.MAP_UPDATE_ELEM, attr)


def map_update_batch(fd: int, keys: bytes, values: bytes, count: int) -> None:
    """``count`` keys and values (each packed one after another, as
    :func:`map_lookup_batch_raw` gives them) written to map ``fd`` in one
    BPF_MAP_UPDATE_BATCH (kernel 5.6+; hash, LRU hash and array maps). A
    :class:`BpfSyscallError` where the kernel or the map type has none (EINVAL,
    ENOTSUPP) or a write failed: the elements before it are written (the caller may
    write them all again one by one: an update is idempotent)."""
    if count == 0:
        return
    if len(keys) % count or len(values) % count:
        raise ValueError(f"{len(keys)} key and {len(values)} value bytes for {count} elements")
    k = ctypes.create_string_buffer(keys, len(keys))
    v = ctypes.create_string_buffer(values, len(values))
    attr = make_attr([(16, ctypes.c_uint64(ctypes.addressof(k))),
                      (24, ctypes.c_uint64(ctypes.addressof(v))),
                      (32, ctypes.c_uint32(count)), (36, ctypes.c_uint32(fd))])  # fmt: skip
    bpf_call(Cmd.MAP_UPDATE_BATCH, attr, what=f"map fd {fd}")


def map_update_many(fd: int, items: Sequence[tuple[bytes, bytes]]) -> None:
    """Write every ``(key, value)`` of ``items`` (all keys one size, all values one
    size) to map ``fd``: in one :func:`map_update_batch` where the kernel has it for
    the map's type, else one by one. For an ARRAY_OF_MAPS or HASH_OF_MAPS the batch
    also waits once for the RCU grace period the kernel waits after each write to
    such a map (kernel/bpf/syscall.c, ``maybe_wait_bpf_programs``), not once per
    element: milliseconds each."""
    if not items:
        return
    try:
        map_update_batch(fd, b"".join(k for k, _ in items), b"".join(v for _, v in items),
                         len(items))  # fmt: skip
    except BpfSyscallError:  # before 5.6, or a map type without it: one by one
        for key, value in items:
            map_update(fd, key, value)


def map_lookup(fd: int, key: bytes, value_size: int) -> bytes | None:
    """BPF_MAP_LOOKUP_ELEM; None when the key is absent. For per-CPU maps pass
    ``value_size`` = round_up(value, 8) * possible CPUs."""
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value_size)
    attr = make_attr(
        [
            (0, ctypes.c_uint32(fd)),
            (8, ctypes.c_uint64(ctypes.addressof(k))),
            (16, ctypes.c_uint64(ctypes.addressof(v))),
        ]
    )
    try:
        bpf_call(Cmd.MAP_LOOKUP_ELEM, attr)
    except BpfSyscallError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise
    return v.raw


def map_lookup_batch_raw(
    fd: int, key_size: int, value_size: int, chunk: int = 4096
) -> tuple[bytes, bytes]:
    """Every key and value of the (hash) map ``fd`` by BPF_MAP_LOOKUP_BATCH, ``chunk``
    entries a call (as libbpf's ``bpf_map_lookup_batch``): the keys packed one after
    another, the values likewise, in the same order. A :class:`BpfSyscallError` where
    the kernel or the map type has no batch operations (EINVAL, ENOTSUPP; kernel 5.6+).
    A map written meanwhile may be read half before, half after."""
    keys = ctypes.create_string_buffer(key_size * chunk)
    values = ctypes.create_string_buffer(value_size * chunk)
    token_in = ctypes.create_string_buffer(max(key_size, 8))
    token_out = ctypes.create_string_buffer(max(key_size, 8))
    out_keys, out_values = bytearray(), bytearray()
    first = True
    while True:
        attr = make_attr([(0, ctypes.c_uint64(0 if first else ctypes.addressof(token_in))),
                          (8, ctypes.c_uint64(ctypes.addressof(token_out))),
                          (16, ctypes.c_uint64(ctypes.addressof(keys))),
                          (24, ctypes.c_uint64(ctypes.addressof(values))),
                          (32, ctypes.c_uint32(chunk)), (36, ctypes.c_uint32(fd))])  # fmt: skip
        done = False
        try:
            bpf_call(Cmd.MAP_LOOKUP_BATCH, attr, what=f"map fd {fd}")
        except BpfSyscallError as exc:
            if exc.errno != errno.ENOENT:  # ENOENT: the last batch
                raise
            done = True
        count = int.from_bytes(attr.raw[32:36], "little")  # read, also at the end
        out_keys += keys.raw[: count * key_size]
        out_values += values.raw[: count * value_size]
        if done:
            return bytes(out_keys), bytes(out_values)
        ctypes.memmove(token_in, token_out, len(token_out))
        first = False


def map_lookup_batch_u64(fd: int, max_entries: int) -> tuple[bytes, bytes]:
    """:func:`map_lookup_batch_raw` of a hash map of u64 keys and values of at most
    ``max_entries`` (in one call where the kernel gives them all; room for a hash
    bucket's rest beyond them, else the kernel says ENOSPC)."""
    return map_lookup_batch_raw(fd, 8, 8, chunk=max_entries + 64)


def map_delete(fd: int, key: bytes) -> None:
    """BPF_MAP_DELETE_ELEM (ENOENT is not an error)."""
    k = ctypes.create_string_buffer(key, len(key))
    attr = make_attr([(0, ctypes.c_uint32(fd)), (8, ctypes.c_uint64(ctypes.addressof(k)))])
    try:
        bpf_call(Cmd.MAP_DELETE_ELEM, attr)
    except BpfSyscallError as exc:
        if exc.errno != errno.ENOENT:
            raise


def percpu_values(fd: int, value_size: int, key: int = 0) -> list[bytes]:
    """The values at ``key`` of a PERCPU_ARRAY map whose values are ``value_size``
    bytes, one per possible CPU (each its ``value_size`` bytes; the kernel pads each to
    8); zeros when the key is absent."""
    ncpu, step = possible_cpu_count(), (value_size + 7) // 8 * 8
    raw = map_lookup(fd, key.to_bytes(4, "little"), step * ncpu)
    if raw is None:
        return [bytes(value_size)] * ncpu
    return [raw[i * step : i * step + value_size] for i in range(ncpu)]


def percpu_u64(fd: int, key: int = 0) -> list[int]:
    """The u64 at ``key`` of a PERCPU_ARRAY map, one value per possible CPU (zeros
    when the key is absent): how ringtool reads its per-CPU drop counters."""
    ncpu = possible_cpu_count()
    raw = map_lookup(fd, key.to_bytes(4, "little"), 8 * ncpu)
    if raw is None:
        return [0] * ncpu
    return list(memoryview(raw).cast("Q"))


@dataclass(frozen=True, slots=True)
class TestRunResult:
    retval: int
    duration_ns: int


def prog_test_run(
    prog_fd: int, *, data: bytes, repeat: int = 1, flags: int = 0, cpu: int = 0
) -> TestRunResult:
    """BPF_PROG_TEST_RUN: run ``prog_fd`` ``repeat`` times in the kernel on ``data``.

    For SCHED_CLS programs ``data`` is the packet (at least 14 bytes) and the runs
    happen on the calling thread's CPU: pin the thread to choose it.
    """
    d = ctypes.create_string_buffer(data, len(data))
    attr = make_attr(
        [
            (0, ctypes.c_uint32(prog_fd)),
            (8, ctypes.c_uint32(len(data))),
            (16, ctypes.c_uint64(ctypes.addressof(d))),
            (32, ctypes.c_uint32(repeat)),
            (64, ctypes.c_uint32(flags)),
            (68, ctypes.c_uint32(cpu)),
        ]
    )
    bpf_call(Cmd.PROG_TEST_RUN, attr, what=f"prog fd {prog_fd}")
    retval = ctypes.c_uint32.from_buffer(attr, 4).value
    duration = ctypes.c_uint32.from_buffer(attr, 36).value
    return TestRunResult(retval=retval, duration_ns=duration)


def prog_test_run_raw_tp(prog_fd: int) -> int:
    """BPF_PROG_TEST_RUN of a RAW_TRACEPOINT program with no context, once, on the
    calling CPU (the kernel's ``bpf_prog_test_run_raw_tp`` refuses data, repeat and
    duration for this type); returns the program's return value."""
    attr = make_attr([(0, ctypes.c_uint32(prog_fd))])
    bpf_call(Cmd.PROG_TEST_RUN, attr, what=f"raw_tp prog fd {prog_fd}")
    return ctypes.c_uint32.from_buffer(attr, 4).value


def obj_pin(fd: int, path: str) -> None:
    """BPF_OBJ_PIN: pin the map or program ``fd`` at ``path`` on a bpffs."""
    p = ctypes.create_string_buffer(os.fsencode(path))
    attr = make_attr([(0, ctypes.c_uint64(ctypes.addressof(p))), (8, ctypes.c_uint32(fd))])
    bpf_call(Cmd.OBJ_PIN, attr, what=path)


def obj_get(path: str) -> int:
    """BPF_OBJ_GET: a new fd of the object pinned at ``path`` (the caller closes it)."""
    p = ctypes.create_string_buffer(os.fsencode(path))
    attr = make_attr([(0, ctypes.c_uint64(ctypes.addressof(p)))])
    return bpf_call(Cmd.OBJ_GET, attr, what=path)


def close_fd(fd: int) -> None:
    """Close ``fd``, ignoring EBADF (already closed)."""
    try:
        os.close(fd)
    except OSError as exc:
        if exc.errno != errno.EBADF:
            raise
