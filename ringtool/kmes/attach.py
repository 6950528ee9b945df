"""The client side of the KMES attach protocol v2 (docs/kmes.md section 11; server:
:mod:`ringtool.bridge.attach_server`).

* Connect to the bridge's UNIX socket, send ``ATTACH\\n``.
* Read one JSON line ``{"version": 2, "cpus": [...], "capacity": N, "generation": G,
  "fds_per_cpu": 2}`` and ``2 * len(cpus)`` descriptors (meta0, data0, meta1, ...)
  from as many ``recvmsg`` calls as the bridge uses (one SCM_RIGHTS message carries at
  most 253 descriptors; bytes after the newline are filler and ignored).

Contract of every function here: it returns, or raises :class:`KmesAttachError` (the
Readers :func:`attach` builds may raise :class:`KmesFormatError` for descriptors that
are not sealed memfds of the promised sizes) — never another exception, never a hang:
the whole exchange has one deadline (``timeout``), the reply line is bounded at
:data:`MAX_REPLY` bytes, and every descriptor received is closed on any failure.
A full listen backlog (EAGAIN) or a refused connection is retried with backoff until
the deadline. The bridge's pid comes from SO_PEERCRED; readers watch it (pidfd) to
notice a dead bridge.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import struct
import time
from collections.abc import Callable, Iterable

from ringtool.errors import KmesAttachError, KmesCapacityError
from ringtool.kmes.attach_protocol import (
    DEFAULT_SOCKET,
    FDS_PER_CPU,
    PROTOCOL_VERSION,
    REQUEST,
    SCM_MAX_FD,
    AttachInfo,
)
from ringtool.kmes.layout import check_capacity
from ringtool.kmes.reader import Reader, Reattach

__all__ = [
    "DEFAULT_SOCKET",
    "AttachInfo",
    "AttachReply",
    "attach",
    "attach_fds",
    "attach_new",
    "exchange",
    "reattacher",
]

MAX_REPLY = 64 * 1024  # bytes of the JSON line (300 CPUs need ~1.5 KiB)
_UCRED = struct.Struct("iII")  # struct ucred: pid, uid, gid
_RETRY = (errno.EAGAIN, errno.ECONNREFUSED)


class AttachReply:
    """A validated reply: ``cpus``, ``capacity``, ``generation``, the bridge's ``pid``
    and ``fds`` (2 per CPU, meta then data, owned by whoever takes them)."""

    def __init__(self, raw: dict[str, object], fds: list[int], pid: int) -> None:
        self.raw, self.fds, self.pid = raw, fds, pid
        self.cpus = _cpus(raw.get("cpus"))
        self.capacity = _int(raw, "capacity")
        self.generation = _int(raw, "generation")
        try:
            check_capacity(self.capacity)
        except KmesCapacityError as exc:
            raise KmesAttachError(f"attach reply: {exc}") from None
        if self.generation < 1:
            raise KmesAttachError(f"attach reply generation {self.generation} < 1")

    def pairs(self) -> list[tuple[int, int]]:
        """The descriptors as ``(meta_fd, data_fd)`` pairs, one per CPU in ``cpus`` order;
        the caller owns them (pass each pair to
        :class:`ringtool.kmes.reader.Reader`, which then owns it)."""
        return [(self.fds[i], self.fds[i + 1]) for i in range(0, len(self.fds), 2)]


def _int(raw: dict[str, object], key: str) -> int:
    v = raw.get(key)
    if not isinstance(v, int) or isinstance(v, bool):
        raise KmesAttachError(f"attach reply field {key!r} is {v!r}, not an integer")
    return v


def _cpus(v: object) -> list[int]:
    if not isinstance(v, list) or not v:
        raise KmesAttachError(f"attach reply 'cpus' is {str(v)[:60]}, not a list of CPUs")
    if not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 1 << 16 for c in v):
        raise KmesAttachError(f"attach reply 'cpus' has non-CPU entries: {str(v)[:60]}")
    if len(set(v)) != len(v):
        raise KmesAttachError("attach reply lists a CPU twice")
    return list(v)


def _connect(path: str, deadline: float) -> socket.socket:
    delay = 0.005
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            sock.connect(path)
            return sock
        except FileNotFoundError:
            sock.close()
            raise KmesAttachError(
                f"no KMES bridge socket at {path} (is `ringtool bridge` running?)"
            ) from None
        except OSError as exc:
            sock.close()
            if exc.errno not in _RETRY or time.monotonic() + delay > deadline:
                raise KmesAttachError(f"cannot connect to {path}: {exc.strerror or exc}") from None
        time.sleep(delay)  # backlog full or no listener (yet): back off, retry
        delay = min(delay * 2, 0.2)


def _recv(sock: socket.socket, deadline: float, fds: list[int], nbytes: int) -> bytes:
    """One recvmsg within the deadline; received descriptors go to ``fds`` at once."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    sock.settimeout(left)
    msg, got, flags, _addr = socket.recv_fds(sock, nbytes, SCM_MAX_FD)
    fds.extend(got)
    if flags & socket.MSG_CTRUNC:
        raise KmesAttachError("attach reply carried more descriptors than one message may")
    return msg


def _line(sock: socket.socket, deadline: float, fds: list[int]) -> tuple[bytes, int]:
    data = b""
    while b"\n" not in data:
        msg = _recv(sock, deadline, fds, MAX_REPLY + 1 - len(data))
        if not msg:
            raise KmesAttachError(f"bridge closed the connection mid-reply: {data[:80]!r}")
        data += msg
        if len(data) > MAX_REPLY:
            raise KmesAttachError(f"attach reply line longer than {MAX_REPLY} bytes")
    line = data.split(b"\n", 1)[0]
    return line, len(data)


def _parse(line: bytes, path: str) -> dict[str, object]:
    try:
        raw = json.loads(line)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise KmesAttachError(f"bad attach reply from {path}: {line[:80]!r}") from None
    if not isinstance(raw, dict):
        raise KmesAttachError(f"bad attach reply from {path}: {line[:80]!r}")
    if "error" in raw:
        raise KmesAttachError(f"attach refused by {path}: {str(raw['error'])[:200]}")
    version = raw.get("version")
    if type(version) is not int or version != PROTOCOL_VERSION:
        raise KmesAttachError(
            f"unsupported attach protocol version {version!r} (want {PROTOCOL_VERSION})"
        )
    per = raw.get("fds_per_cpu")
    if type(per) is not int or per != FDS_PER_CPU:
        raise KmesAttachError(f"attach reply fds_per_cpu is {per!r}, want {FDS_PER_CPU}")
    return raw


def exchange(path: str = DEFAULT_SOCKET, timeout: float = 5.0) -> AttachReply:
    """One attach exchange (see the module contract); the caller owns ``reply.fds``."""
    deadline = time.monotonic() + timeout
    fds: list[int] = []
    sock = _connect(path, deadline)
    try:
        pid = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))[0]
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        sock.sendall(REQUEST)
        line, _ = _line(sock, deadline, fds)
        raw = _parse(line, path)
        want = FDS_PER_CPU * len(_cpus(raw.get("cpus")))
        while len(fds) < want:  # later chunks: descriptors + filler bytes (ignored)
            if not _recv(sock, deadline, fds, 64) and len(fds) < want:
                break  # EOF
        if len(fds) != want:
            raise KmesAttachError(f"attach reply promised {want} descriptors, carried {len(fds)}")
        reply = AttachReply(raw, fds, pid)
        fds = []
        return reply
    except TimeoutError:
        raise KmesAttachError(f"no complete attach reply from {path} within {timeout} s") from None
    except OSError as exc:
        raise KmesAttachError(f"attach exchange with {path} failed: {exc}") from None
    finally:
        for fd in fds:
            os.close(fd)
        sock.close()


def attach_fds(
    path: str = DEFAULT_SOCKET, timeout: float = 5.0
) -> tuple[dict[str, object], list[int]]:
    """One attach exchange: the reply's JSON and the descriptors (caller owns them)."""
    reply = exchange(path, timeout)
    return reply.raw, reply.fds


def reattacher(path: str, timeout: float = 5.0) -> Reattach:
    """A ``reattach(cpu) -> (meta_fd, data_fd, generation)`` for :class:`Reader`."""

    def reattach(cpu: int) -> tuple[int, int, int]:
        reply = exchange(path, timeout)
        mine: tuple[int, int] | None = None
        for c, (meta, data) in zip(reply.cpus, reply.pairs(), strict=True):
            if c == cpu:
                mine = (meta, data)
            else:
                os.close(meta)
                os.close(data)
        if mine is None:
            raise KmesAttachError(f"CPU {cpu} no longer offered by {path}")
        return mine[0], mine[1], reply.generation

    return reattach


def attach(
    path: str = DEFAULT_SOCKET, *, start: str = "tail", timeout: float = 5.0
) -> list[Reader]:
    """Attach to the bridge at ``path``: one :class:`Reader` per CPU, in ``"cpus"`` order.

    Raises :class:`KmesAttachError` for a failed exchange, :class:`KmesFormatError` for
    descriptors that are not what v2 promises (all descriptors are closed then).
    """
    return _readers(path, start, timeout, skip=())


def attach_new(
    path: str, have: Iterable[int], *, start: str = "tail", timeout: float = 5.0
) -> list[Reader]:
    """Readers for the CPUs the bridge at ``path`` offers now that are not in ``have``.

    A bridge announces a CPU that came online (CPU hotplug) by a generation change of
    every buffer; call this when a :class:`Reader` has switched generations
    (``stats.generations`` grew). ``start="tail"``: the new CPU's buffer is read from
    its first event. Errors as :func:`attach`.
    """
    return _readers(path, start, timeout, skip=frozenset(have))


def _readers(path: str, start: str, timeout: float, skip: Iterable[int]) -> list[Reader]:
    reply = exchange(path, timeout)
    pairs = reply.pairs()
    readers: list[Reader] = []
    again: Callable[[int], tuple[int, int, int]] = reattacher(path, timeout)
    try:
        for i, ((meta, data), cpu) in enumerate(zip(pairs, reply.cpus, strict=True)):
            pairs[i] = (-1, -1)  # the Reader owns them now (closes them even on failure)
            if cpu in skip:
                os.close(meta)
                os.close(data)
                continue
            readers.append(
                Reader(
                    meta,
                    data,
                    generation=reply.generation,
                    reattach=again,
                    start=start,
                    writer_pid=reply.pid,
                    cpu=cpu,
                )
            )
    except BaseException:
        for r in readers:
            r.close()
        for meta, data in pairs:
            if meta >= 0:
                os.close(meta)
                os.close(data)
        raise
    return readers
