"""The KMES attach protocol, version 2: the constants and the handout that the client
(:mod:`ringtool.kmes.attach`) and the bridge's server
(:mod:`ringtool.bridge.attach_server`) share. docs/kmes.md specifies the exchange."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_SOCKET = "/run/ringtool/kmes.sock"
PROTOCOL_VERSION = 2
FDS_PER_CPU = 2  # meta, data
REQUEST = b"ATTACH\n"
SCM_MAX_FD = 253  # the kernel's limit of descriptors in one SCM_RIGHTS message


@dataclass(frozen=True, slots=True)
class AttachInfo:
    """What the server hands out. ``fds`` are ``FDS_PER_CPU`` fresh descriptors per CPU
    (meta0, data0, meta1, data1, ...) that the server closes once sent, so the provider
    may close its own at any time."""

    cpus: list[int]
    fds: list[int]
    capacity: int
    generation: int


__all__ = [
    "DEFAULT_SOCKET",
    "FDS_PER_CPU",
    "PROTOCOL_VERSION",
    "REQUEST",
    "SCM_MAX_FD",
    "AttachInfo",
]
