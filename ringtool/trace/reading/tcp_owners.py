"""The owners of TCP connections by 4-tuple, which name the process of a packet: the
HASH bpf/trace_tcp.c publishes each followed connection's owner in and bpf/trace_net.c
looks every TCP packet up in (bpf/tcp_owners.h; docs/trace.md, "Packets and their
processes").

Made only when a trace has both sources (:func:`wanted`); both programs get the map's
fd and the sizes of its key and value (:func:`owner_defines`, ``-D`` constants: the
header's ``_Static_assert``\\ s check them, and the program cache patches the fd like
the config map's). Without the tcp source nothing would fill it, so it is not made
and packets keep pid 0.
"""

from __future__ import annotations

from collections.abc import Collection

from ringtool.kernel import bpf

#: ``struct tcp_owner_key``: local and remote address (16 bytes each), the two ports.
KEY_SIZE = 36
#: ``struct tcp_owner``: comm (16), cgroup, pid, tid, uid, pad.
VALUE_SIZE = 40
#: Entries: as many as trace_tcp.c follows connections (its ``TRACE_TCP_MAX_CONNS``,
#: which :func:`owner_defines` sets to this): each publishes one at most.
MAX_OWNERS = 16384


def wanted(events: Collection[str]) -> bool:
    """Whether a trace of the sources ``events`` keeps the owners map: net and tcp."""
    return "net" in events and "tcp" in events


def make_owners() -> int:
    """A new, empty owners map; its fd (the caller closes it)."""
    return bpf.map_create(
        bpf.MapType.HASH, key_size=KEY_SIZE, value_size=VALUE_SIZE, max_entries=MAX_OWNERS
    )


def owner_defines(fd: int) -> dict[str, int | str]:
    """The ``-D`` constants of the tcp and net programs for the owners map ``fd``."""
    return {"TRACE_TCP_OWNERS_FD": fd, "TRACE_TCP_OWNER_KEY_SIZE": KEY_SIZE,
            "TRACE_TCP_OWNER_SIZE": VALUE_SIZE, "TRACE_TCP_MAX_CONNS": MAX_OWNERS}  # fmt: skip


__all__ = ["KEY_SIZE", "MAX_OWNERS", "VALUE_SIZE", "make_owners", "owner_defines", "wanted"]
