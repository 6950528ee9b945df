"""A child process that dies with its parent: ``PR_SET_PDEATHSIG`` (prctl(2)).

A helper process (the export's publisher, a benchmark's busy loop) must not outlive
the process that started it when that one is killed without running its cleanup
(SIGKILL, or a SIGTERM with no handler). The kernel sends the signal when the
parent *thread* that forked the child exits, and the setting survives ``execve``
(except of a set-user-ID program).
"""

from __future__ import annotations

import ctypes
import os
import signal

#: prctl(2) option (include/uapi/linux/prctl.h)
PR_SET_PDEATHSIG = 1
#: The running program's own symbols (libc's prctl among them: dlopen(NULL), no library
#: search), opened at import: a child between fork and exec (a ``preexec_fn``) only
#: calls it.
_SELF = ctypes.CDLL(None, use_errno=True)


def die_with_parent(ppid: int) -> None:
    """Called in the child (after its exec, or as a ``preexec_fn``): SIGKILL when the
    parent thread exits; and exit at once when the parent ``ppid`` already exited before
    this call (getppid(2) is no longer it)."""
    _SELF.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != ppid:
        os._exit(0)


__all__ = ["PR_SET_PDEATHSIG", "die_with_parent"]
