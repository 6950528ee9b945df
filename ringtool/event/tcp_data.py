"""The values of a tcp event (``struct trace_tcp``, bpf/trace_tcp.c) that are not plain
numbers: its addresses, the TCP states it went through, whether it failed.

The state numbers are the kernel's (include/net/tcp_states.h), the same on every
kernel and architecture; the record's ``states`` has bit ``1 << n`` set for each state
``n`` the connection was in.
"""

from __future__ import annotations

import errno
import ipaddress

#: TCP state number -> its name (include/net/tcp_states.h, without ``TCP_``).
STATE_NAMES = {
    1: "ESTABLISHED", 2: "SYN_SENT", 3: "SYN_RECV", 4: "FIN_WAIT1", 5: "FIN_WAIT2",
    6: "TIME_WAIT", 7: "CLOSE", 8: "CLOSE_WAIT", 9: "LAST_ACK", 10: "LISTEN",
    11: "CLOSING", 12: "NEW_SYN_RECV",
}  # fmt: skip
ESTABLISHED = 1


def address(raw: bytes) -> str:
    """The text of a 16-byte address: an IPv4-mapped one (``::ffff:a.b.c.d``, how the
    record holds IPv4) as ``a.b.c.d``, any other as IPv6."""
    v6 = ipaddress.IPv6Address(raw)
    return str(v6.ipv4_mapped or v6)


def state_names(mask: int) -> list[str]:
    """The names of the states set in ``mask``, in the kernel's order of the numbers
    (a bit without a name: ``STATE_<n>``)."""
    return [STATE_NAMES.get(n, f"STATE_{n}") for n in range(16) if mask >> n & 1]


def failed(mask: int) -> bool:
    """Whether a connection with ``mask`` never reached ESTABLISHED (a refused or
    timed-out connect, a reset handshake)."""
    return not mask >> ESTABLISHED & 1


def errno_name(code: int) -> str:
    """``ECONNREFUSED`` for 111; ``errno <n>`` for a number without a name."""
    return errno.errorcode.get(code, f"errno {code}")


__all__ = ["STATE_NAMES", "address", "errno_name", "failed", "state_names"]
