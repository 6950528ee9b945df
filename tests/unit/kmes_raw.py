"""The attach protocol v2 spoken by hand, for the server-side tests (independent of
``ringtool.kmes.attach``): connect, send ``ATTACH\\n``, read the JSON line, then keep
receiving until ``fds_per_cpu * len(cpus)`` descriptors arrived."""

from __future__ import annotations

import json
import os
import socket
from typing import Any

SCM_MAX_FD = 253


def raw_attach(path: str, timeout: float = 10.0) -> tuple[dict[str, Any], list[int], int]:
    """``(reply, fds, messages)``; ``messages`` = recvmsg calls that carried descriptors.
    Raises OSError/ValueError on anything unexpected (closing what it received)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    fds: list[int] = []
    messages = 0
    try:
        sock.connect(path)
        sock.sendall(b"ATTACH\n")
        data = b""
        want = -1
        while want < 0 or len(fds) < want:
            msg, got, _flags, _addr = socket.recv_fds(sock, 65536, SCM_MAX_FD)
            if got:
                messages += 1
                fds.extend(got)
            if not msg:
                raise ValueError(f"EOF after {data[:200]!r} and {len(fds)} descriptors")
            if want < 0:
                data += msg
                if b"\n" in data:
                    line, _, rest = data.partition(b"\n")
                    reply = json.loads(line)
                    if "error" in reply:
                        return reply, fds, messages
                    want = int(reply["fds_per_cpu"]) * len(reply["cpus"])
                    if rest.strip(b" "):
                        raise ValueError(f"unexpected bytes after the line: {rest!r}")
            elif msg.strip(b" "):
                raise ValueError(f"unexpected bytes between chunks: {msg!r}")
        return reply, fds, messages
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    finally:
        sock.close()
