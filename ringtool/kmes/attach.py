"""The KMES attach protocol (DESIGN.md, the user-space stand-in for ``kmes_attach``).

* The bridge listens on a UNIX stream socket (default ``/run/ringtool/kmes.sock``,
  mode 0660). A consumer connects and sends ``ATTACH\\n``.
* The bridge answers with one JSON line
  ``{"version": 1, "cpus": [...], "capacity": N, "generation": G}`` and, in the same
  ``sendmsg``, one descriptor per CPU (SCM_RIGHTS) in the order of ``"cpus"``.
* Peers are checked with SO_PEERCRED: root, the bridge's own user, or a member of the
  socket's group. A refused peer gets ``{"error": "..."}`` and no descriptors.

:class:`AttachServer` is the server (a thread with a selector); :func:`attach` the client.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable

from ringtool.errors import KmesAttachError
from ringtool.kmes.attach_server import (
    DEFAULT_SOCKET,
    PROTOCOL_VERSION,
    REQUEST,
    SCM_MAX_FD,
    AttachInfo,
    AttachServer,
)
from ringtool.kmes.reader import Reader

__all__ = ["DEFAULT_SOCKET", "AttachInfo", "AttachServer", "attach", "attach_fds", "reattacher"]


def attach_fds(
    path: str = DEFAULT_SOCKET, timeout: float = 5.0
) -> tuple[dict[str, object], list[int]]:
    """One attach exchange: the reply's JSON and the descriptors (caller owns them)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    sock.settimeout(timeout)
    fds: list[int] = []
    try:
        try:
            sock.connect(path)
        except FileNotFoundError:
            raise KmesAttachError(
                f"no KMES bridge socket at {path} (is `ringtool bridge` running?)"
            ) from None
        except OSError as exc:
            raise KmesAttachError(f"cannot connect to {path}: {exc.strerror}") from None
        sock.sendall(REQUEST)
        data = b""
        while not data.endswith(b"\n"):
            msg, got, _flags, _addr = socket.recv_fds(sock, 65536, SCM_MAX_FD)
            fds.extend(got)
            if not msg:
                break
            data += msg
        try:
            reply = json.loads(data)
        except ValueError:
            raise KmesAttachError(f"bad attach reply from {path}: {data[:80]!r}") from None
        if not isinstance(reply, dict):
            raise KmesAttachError(f"bad attach reply from {path}: {data[:80]!r}")
        if "error" in reply:
            raise KmesAttachError(f"attach refused by {path}: {reply['error']}")
        if reply.get("version") != PROTOCOL_VERSION:
            raise KmesAttachError(f"unsupported attach protocol version {reply.get('version')}")
        cpus = reply.get("cpus")
        if not isinstance(cpus, list) or len(cpus) != len(fds):
            raise KmesAttachError(f"attach reply lists {cpus} but carried {len(fds)} descriptors")
        result, fds = fds, []
        return reply, result
    except TimeoutError:
        raise KmesAttachError(f"no attach reply from {path} within {timeout} s") from None
    finally:
        for fd in fds:
            os.close(fd)
        sock.close()


def reattacher(path: str, timeout: float = 5.0) -> Callable[[int], tuple[int, int]]:
    """A ``reattach(cpu) -> (fd, generation)`` for :class:`Reader`: a fresh exchange."""

    def reattach(cpu: int) -> tuple[int, int]:
        reply, fds = attach_fds(path, timeout)
        cpus = reply["cpus"]
        assert isinstance(cpus, list)
        mine = -1
        for c, fd in zip(cpus, fds, strict=True):
            if c == cpu and mine < 0:
                mine = fd
            else:
                os.close(fd)
        if mine < 0:
            raise KmesAttachError(f"CPU {cpu} no longer offered by {path}")
        return mine, _generation(reply)

    return reattach


def _generation(reply: dict[str, object]) -> int:
    gen = reply.get("generation")
    if not isinstance(gen, int):
        raise KmesAttachError(f"attach reply has no integer generation: {gen!r}")
    return gen


def attach(
    path: str = DEFAULT_SOCKET, *, start: str = "tail", timeout: float = 5.0
) -> list[Reader]:
    """Attach to the bridge at ``path``: one :class:`Reader` per CPU, in ``"cpus"`` order."""
    reply, fds = attach_fds(path, timeout)
    readers: list[Reader] = []
    again = reattacher(path, timeout)
    try:
        gen = _generation(reply)
        for i, fd in enumerate(fds):
            fds[i] = -1  # the Reader owns it now (closes it even if mapping fails)
            readers.append(Reader(fd, generation=gen, reattach=again, start=start))
    except BaseException:
        for r in readers:
            r.close()
        for fd in fds:
            if fd >= 0:
                os.close(fd)
        raise
    return readers
