"""bpf(2) and perf_event_open(2) calls that load and attach programs without BCC:
BTF, maps with BTF, programs (with the verifier's log on refusal), raw tracepoints,
tracepoint perf events, and what the kernel says about a map's BTF.

Layouts follow include/uapi/linux/bpf.h (``union bpf_attr``, ``struct bpf_map_info``,
``struct bpf_btf_info``) and include/uapi/linux/perf_event.h. Every failure raises
:class:`ringtool.errors.BpfSyscallError` (PrivilegeError for EPERM) or
:class:`ringtool.errors.PerfEventOpenError`; fds returned are the caller's to close.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from ringtool.errors import BpfSyscallError, PerfEventOpenError
from ringtool.kernel.bpf import Cmd, bpf_call, make_attr, map_lookup_batch_raw
from ringtool.kernel.perf_event import PerfEventAttr, enable, perf_event_open

#: The verifier log kept of a refused program (its last lines say why).
LOG_BYTES = 1 << 20
PERF_TYPE_TRACEPOINT = 2
PERF_EVENT_IOC_SET_BPF = 0x40042408  # _IOW('$', 8, __u32)
TRACEFS = ("/sys/kernel/tracing", "/sys/kernel/debug/tracing")


def _buf(data: bytes) -> ctypes.Array[ctypes.c_char]:
    return ctypes.create_string_buffer(data, len(data))


def _name16(name: str) -> ctypes.Array[ctypes.c_char]:
    """A kernel object name: at most 15 bytes + NUL (BPF_OBJ_NAME_LEN)."""
    out = ctypes.create_string_buffer(16)
    raw = name.encode()[:15]
    ctypes.memmove(out, raw, len(raw))
    return out


def btf_load(blob: bytes) -> int:
    """BPF_BTF_LOAD of raw BTF ``blob``; its fd."""
    b = _buf(blob)
    attr = make_attr([(0, ctypes.c_uint64(ctypes.addressof(b))), (16, ctypes.c_uint32(len(blob)))])
    return bpf_call(Cmd.BTF_LOAD, attr, what=f"{len(blob)} bytes of BTF")


@dataclass(frozen=True, slots=True)
class MapSpec:
    """What BPF_MAP_CREATE needs of a map (``btf_fd`` 0: none)."""

    map_type: int
    key_size: int
    value_size: int
    max_entries: int
    flags: int
    name: str
    btf_key_type_id: int = 0
    btf_value_type_id: int = 0


def map_create_spec(spec: MapSpec, btf_fd: int = 0) -> int:
    """BPF_MAP_CREATE of ``spec`` with its name and, with ``btf_fd``, its BTF types."""
    name = _name16(spec.name)
    fields: list[tuple[int, ctypes._SimpleCData[int]]] = [
        (0, ctypes.c_uint32(spec.map_type)),
        (4, ctypes.c_uint32(spec.key_size)),
        (8, ctypes.c_uint32(spec.value_size)),
        (12, ctypes.c_uint32(spec.max_entries)),
        (16, ctypes.c_uint32(spec.flags)),
    ]
    if btf_fd:
        fields += [
            (48, ctypes.c_uint32(btf_fd)),
            (52, ctypes.c_uint32(spec.btf_key_type_id)),
            (56, ctypes.c_uint32(spec.btf_value_type_id)),
        ]
    attr = make_attr(fields)
    ctypes.memmove(ctypes.addressof(attr) + 28, name, 16)
    return bpf_call(Cmd.MAP_CREATE, attr, what=f"map {spec.name} (type {spec.map_type})")


class ProgLoadError(BpfSyscallError):
    """The kernel refused a program; ``log`` is the verifier's log (may be empty)."""

    def __init__(self, name: str, errno_: int, log: str) -> None:
        tail = " | ".join(log.strip().splitlines()[-3:])
        super().__init__("PROG_LOAD", errno_, f"program {name}: {tail or 'no verifier log'}")
        self.log = log


def prog_load(
    prog_type: int, insns: bytes, *, license: str, name: str, expected_attach_type: int = 0
) -> int:
    """BPF_PROG_LOAD of ``insns`` (8-byte instructions); its fd. A refusal is a
    :class:`ProgLoadError` with the verifier's log (loaded again with the log on:
    the first try runs without one, as libbpf does)."""
    code = _buf(insns)
    lic = ctypes.create_string_buffer(license.encode())
    pname = _name16(name)

    def attempt(log: ctypes.Array[ctypes.c_char] | None) -> int:
        fields: list[tuple[int, ctypes._SimpleCData[int]]] = [
            (0, ctypes.c_uint32(prog_type)),
            (4, ctypes.c_uint32(len(insns) // 8)),
            (8, ctypes.c_uint64(ctypes.addressof(code))),
            (16, ctypes.c_uint64(ctypes.addressof(lic))),
            (68, ctypes.c_uint32(expected_attach_type)),
        ]
        if log is not None:
            fields += [
                (24, ctypes.c_uint32(1)),
                (28, ctypes.c_uint32(len(log))),
                (32, ctypes.c_uint64(ctypes.addressof(log))),
            ]
        attr = make_attr(fields)
        ctypes.memmove(ctypes.addressof(attr) + 48, pname, 16)
        return bpf_call(Cmd.PROG_LOAD, attr, what=f"program {name}")

    try:
        return attempt(None)
    except BpfSyscallError as first:
        if first.errno == errno.EPERM:
            raise
        log = ctypes.create_string_buffer(LOG_BYTES)
        try:
            return attempt(log)
        except BpfSyscallError as exc:
            text = log.value.decode(errors="replace")
            raise ProgLoadError(name, exc.errno or 0, text) from exc


def raw_tracepoint_open(name: str, prog_fd: int) -> int:
    """BPF_RAW_TRACEPOINT_OPEN: attach ``prog_fd`` to raw tracepoint ``name``; the
    link fd (closing it detaches)."""
    n = ctypes.create_string_buffer(name.encode())
    attr = make_attr([(0, ctypes.c_uint64(ctypes.addressof(n))), (8, ctypes.c_uint32(prog_fd))])
    return bpf_call(Cmd.RAW_TRACEPOINT_OPEN, attr, what=f"raw tracepoint {name}")


def tracepoint_id(category: str, event: str) -> int:
    """The id of tracepoint ``category:event`` from tracefs ``events/<cat>/<name>/id``;
    PerfEventOpenError(ENOENT) when no tracefs has it."""
    for root in TRACEFS:
        try:
            return int(Path(root, "events", category, event, "id").read_text())
        except (OSError, ValueError):
            continue
    raise PerfEventOpenError(errno.ENOENT, f"no tracepoint {category}:{event} in tracefs")


def tracepoint_attach(category: str, event: str, prog_fd: int) -> int:
    """Attach ``prog_fd`` to tracepoint ``category:event`` as BCC does: a
    PERF_TYPE_TRACEPOINT event on CPU 0 for every process, PERF_EVENT_IOC_SET_BPF, then
    enabled; the perf fd (disable and close it to detach)."""
    attr = PerfEventAttr()
    attr.type = PERF_TYPE_TRACEPOINT
    attr.size = ctypes.sizeof(PerfEventAttr)
    attr.config = tracepoint_id(category, event)
    attr.sample_period = 1
    attr.wakeup = 1
    fd = perf_event_open(attr, pid=-1, cpu=0)
    try:
        fcntl.ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog_fd)
        enable(fd)
    except OSError as exc:
        os.close(fd)
        raise PerfEventOpenError(exc.errno or 0, f"attach to {category}:{event}: {exc}") from exc
    return fd


def btf_blob(btf_id: int) -> bytes:
    """The raw BTF of the kernel's BTF object ``btf_id`` (BPF_BTF_GET_FD_BY_ID, then
    BPF_OBJ_GET_INFO_BY_FD with a buffer of the size the first call reports)."""
    fd = bpf_call(
        Cmd.BTF_GET_FD_BY_ID, make_attr([(0, ctypes.c_uint32(btf_id))]), what=f"BTF id {btf_id}"
    )
    try:
        info = ctypes.create_string_buffer(40)
        attr = make_attr(
            [
                (0, ctypes.c_uint32(fd)),
                (4, ctypes.c_uint32(40)),
                (8, ctypes.c_uint64(ctypes.addressof(info))),
            ]
        )
        bpf_call(Cmd.OBJ_GET_INFO_BY_FD, attr, what=f"BTF id {btf_id}")
        size = int.from_bytes(info.raw[8:12], "little")
        blob = ctypes.create_string_buffer(size)
        info = ctypes.create_string_buffer(40)
        ctypes.memmove(info, ctypes.byref(ctypes.c_uint64(ctypes.addressof(blob))), 8)
        ctypes.memmove(ctypes.addressof(info) + 8, ctypes.byref(ctypes.c_uint32(size)), 4)
        attr = make_attr(
            [
                (0, ctypes.c_uint32(fd)),
                (4, ctypes.c_uint32(40)),
                (8, ctypes.c_uint64(ctypes.addressof(info))),
            ]
        )
        bpf_call(Cmd.OBJ_GET_INFO_BY_FD, attr, what=f"BTF id {btf_id}")
        return blob.raw[:size]
    finally:
        os.close(fd)


def map_next_key(fd: int, key: bytes | None, key_size: int) -> bytes | None:
    """BPF_MAP_GET_NEXT_KEY: the key after ``key`` (None: the first); None at the end."""
    k = _buf(key) if key is not None else None
    nxt = ctypes.create_string_buffer(key_size)
    attr = make_attr(
        [
            (0, ctypes.c_uint32(fd)),
            (8, ctypes.c_uint64(ctypes.addressof(k) if k is not None else 0)),
            (16, ctypes.c_uint64(ctypes.addressof(nxt))),
        ]
    )
    try:
        bpf_call(Cmd.MAP_GET_NEXT_KEY, attr, what=f"map fd {fd}")
    except BpfSyscallError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise
    return nxt.raw


def map_lookup_batch(
    fd: int, key_size: int, value_size: int, chunk: int = 4096
) -> list[tuple[bytes, bytes]]:
    """Every ``(key, value)`` of the (hash) map ``fd``
    (:func:`ringtool.kernel.bpf.map_lookup_batch_raw`, cut into pairs)."""
    keys, values = map_lookup_batch_raw(fd, key_size, value_size, chunk)
    return [(keys[i * key_size : (i + 1) * key_size],
             values[i * value_size : (i + 1) * value_size])
            for i in range(len(keys) // key_size)]  # fmt: skip


__all__ = [
    "MapSpec",
    "ProgLoadError",
    "btf_blob",
    "btf_load",
    "map_create_spec",
    "map_lookup_batch",
    "map_next_key",
    "prog_load",
    "raw_tracepoint_open",
    "tracepoint_attach",
    "tracepoint_id",
]
