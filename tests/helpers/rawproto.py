"""The KMES attach protocol done by hand (docs/kmes.md section 11, version 2).

Independent of ``ringtool.kmes.attach``: the adversarial tests speak the wire protocol
themselves, as an outside consumer (honest or hostile) or a fake bridge would.

* :func:`raw_attach`: connect, send ``ATTACH\\n``, collect the JSON line and every
  descriptor from as many ``recvmsg`` calls as the bridge uses.
* :func:`metadata_page`: a metadata page built from the table of docs/kmes.md section 3.
* :func:`v2_fds`: a (meta, data) pair as docs/kmes.md §2.2 describes it: meta read-write, data a
  sealed memfd re-opened read-only.
"""

from __future__ import annotations

import array
import errno
import fcntl
import json
import os
import socket
import struct
import time
from collections.abc import Iterator
from typing import Any

REQUEST = b"ATTACH\n"
SCM_MAX_FD = 253  # the kernel's SCM_MAX_FD: descriptors in one SCM_RIGHTS message
PAGE = 4096
# docs/kmes.md §3.1 static fields: magic, version, cpu_id, reserved0, capacity, data_offset,
# generation
STATIC = struct.Struct("<8sIHHQQQ")
OFF_WRITE_POS, OFF_TAIL_POS, OFF_FUTEX, OFF_NEED_WAKE = 64, 72, 128, 132
F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE = 0x1, 0x2, 0x4, 0x8
F_SEAL_FUTURE_WRITE = 0x10


class RawReply:
    """One attach exchange: the reply object, the descriptors, and how they came."""

    def __init__(self, reply: dict[str, Any], fds: list[int], messages: int) -> None:
        self.reply = reply
        self.fds = fds
        self.messages = messages  # recvmsg calls that carried descriptors

    def __iter__(self) -> Iterator[Any]:
        """``reply, fds, messages = raw_attach(...)``."""
        return iter((self.reply, self.fds, self.messages))

    def close(self) -> None:
        for fd in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        self.fds = []


def connect(path: str, timeout: float = 5.0) -> socket.socket:
    """Connect, retrying while the listen backlog is full (EAGAIN) up to ``timeout``."""
    end = time.monotonic() + timeout
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        s.settimeout(timeout)
        try:
            s.connect(path)
            return s
        except (BlockingIOError, InterruptedError) as exc:
            s.close()
            if time.monotonic() > end:
                raise TimeoutError(f"backlog of {path} stayed full") from exc
            time.sleep(0.01)
        except BaseException:
            s.close()
            raise


def recv_reply(s: socket.socket, max_bytes: int = 1 << 20, *, strict: bool = False) -> RawReply:
    """Read the JSON line and the descriptors that come with it (several messages).
    ``strict``: a reply with fewer descriptors than announced (EOF first) or with bytes
    other than spaces after its line raises ValueError (a server-side test's check)."""
    data = b""
    fds: list[int] = []
    messages = 0
    expected: int | None = None
    try:
        while True:
            if b"\n" in data and expected is None:
                line = data.split(b"\n", 1)[0]
                reply = json.loads(line)
                n = len(reply.get("cpus", [])) if isinstance(reply, dict) else 0
                expected = n * int(reply.get("fds_per_cpu", 1)) if "error" not in reply else 0
            if expected is not None and len(fds) >= expected:
                if strict and data.split(b"\n", 1)[1].strip(b" "):
                    raise ValueError(f"unexpected bytes after the line: {data[:200]!r}")
                return RawReply(reply, fds, messages)
            msg, got, flags, _ = socket.recv_fds(s, 65536, SCM_MAX_FD)
            if flags & socket.MSG_CTRUNC:
                raise OSError(errno.EMSGSIZE, "control data truncated")
            if got:
                messages += 1
                fds.extend(got)
            if not msg and not got:
                if expected is None:
                    raise ConnectionError(f"EOF before a full line: {data[:80]!r}")
                if strict:
                    raise ValueError(f"EOF after {data[:200]!r} and {len(fds)} descriptors")
                return RawReply(reply, fds, messages)
            data += msg
            if len(data) > max_bytes:
                raise ValueError("reply longer than 1 MiB")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def raw_attach(path: str, timeout: float = 5.0, *, strict: bool = False) -> RawReply:
    """A whole exchange with the bridge at ``path`` (``strict``: see :func:`recv_reply`)."""
    with connect(path, timeout) as s:
        s.sendall(REQUEST)
        return recv_reply(s, strict=strict)


def pairs(r: RawReply) -> list[tuple[int, int]]:
    """(meta, data) per CPU, in ``"cpus"`` order (version 2: meta0, data0, meta1, ...)."""
    per = int(r.reply.get("fds_per_cpu", 1))
    if per != 2:
        return [(fd, fd) for fd in r.fds]  # version 1: one combined descriptor
    return [(r.fds[i], r.fds[i + 1]) for i in range(0, len(r.fds), 2)]


def metadata_page(cpu: int, capacity: int, generation: int = 1) -> bytes:
    """A fresh metadata page: magic, version 1, cpu, capacity, data_offset 4096, rest 0."""
    page = bytearray(PAGE)
    STATIC.pack_into(page, 0, b"KMESRING", 1, cpu, 0, capacity, PAGE, generation)
    return bytes(page)


def v2_fds(cpu: int, capacity: int, generation: int = 1) -> tuple[int, int]:
    """(meta, data) as docs/kmes.md §2.2-2.3 describes them; the caller owns both."""
    meta = os.memfd_create(f"fake-meta{cpu}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(meta, PAGE)
    os.pwrite(meta, metadata_page(cpu, capacity, generation), 0)
    fcntl.fcntl(meta, fcntl.F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)
    rw = os.memfd_create(f"fake-data{cpu}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(rw, capacity)
        seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE | F_SEAL_SEAL
        fcntl.fcntl(rw, fcntl.F_ADD_SEALS, seals)
        data = os.open(f"/proc/self/fd/{rw}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(rw)
    return meta, data


def send_in_messages(conn: socket.socket, line: bytes, fds: list[int], per_msg: int) -> int:
    """Send ``line`` and ``fds`` in ceil(len(fds)/per_msg) sendmsg calls: the line's bytes
    are split across the messages so each carries data (SCM_RIGHTS needs >= 1 byte) and
    the newline arrives with the last descriptors. Returns the number of messages."""
    chunks = [fds[i : i + per_msg] for i in range(0, len(fds), per_msg)] or [[]]
    n = len(chunks)
    step = max(1, len(line) // n)
    cuts = [i * step for i in range(n)] + [len(line)]
    for k, chunk in enumerate(chunks):
        part = line[cuts[k] : cuts[k + 1]]
        anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", chunk))] if chunk else []
        conn.sendmsg([part], anc)
    return n
