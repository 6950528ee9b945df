"""Which syscalls are blocking waits: a long latency there is time spent waiting for
something else (a lock, an event, a child, a timer, a signal), not slow work.

The dashboard marks them in its syscall tables and leaves them out of the p99 sort
unless asked (docs/trace.md, the dashboard). A ``read`` of a pipe or socket may wait
too, but a syscall number alone cannot tell it from a slow disk read: it is not here.
Names as :mod:`ringtool.event.syscalls` gives them.
"""

from __future__ import annotations

#: The syscalls whose latency is a wait (see the module doc).
BLOCKING = frozenset({
    "futex", "futex_waitv", "epoll_wait", "epoll_pwait", "epoll_pwait2", "poll", "ppoll",
    "select", "pselect6", "_newselect", "nanosleep", "clock_nanosleep", "wait4", "waitid",
    "rt_sigsuspend", "rt_sigtimedwait", "pause",
})  # fmt: skip


def is_wait(name: str) -> bool:
    """Whether syscall ``name`` is a blocking wait (:data:`BLOCKING`)."""
    return name in BLOCKING


__all__ = ["BLOCKING", "is_wait"]
