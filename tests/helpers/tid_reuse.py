"""A process named ``argv[1]`` that, once told to (a line on stdin), starts a thread
that ends at once (glibc ends it in exit(2), a syscall that never returns), then
makes a child with that thread's tid (clone3's ``set_tid``) which exits at once, and
prints ``TID CHILD_PID``. With ``exec`` as ``argv[2]`` the thread execs this module
(in the mode ``child TID``) instead: the exec gives it the leader's tid (de_thread in
fs/exec.c) and frees its own, which the new image then gives its child. Started by
tests/kernel/trace/test_latency_slots.py. x86-64 numbers."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
import time

SYS_CLONE3 = 435
PR_SET_NAME = 15
SIGCHLD = 17
TRIES = 500  # a tid is freed after the thread's join returns (its exit goes on)


class CloneArgs(ctypes.Structure):
    """struct clone_args (include/uapi/linux/sched.h), up to set_tid_size."""

    _fields_ = [(name, ctypes.c_uint64) for name in (
        "flags", "pidfd", "child_tid", "parent_tid", "exit_signal", "stack", "stack_size",
        "tls", "set_tid", "set_tid_size")]  # fmt: skip


LIBC = ctypes.CDLL(None, use_errno=True)


def set_comm(name: str) -> None:
    LIBC.prctl(PR_SET_NAME, name.encode(), 0, 0, 0)


def fork_with_tid(tid: int) -> int:
    """A child (this process's copy, as fork) whose pid is ``tid``; 0 in the child."""
    want = (ctypes.c_int32 * 1)(tid)
    args = CloneArgs(exit_signal=SIGCHLD, set_tid=ctypes.addressof(want), set_tid_size=1)
    for _ in range(TRIES):
        pid = LIBC.syscall(SYS_CLONE3, ctypes.byref(args), ctypes.sizeof(args))
        if pid >= 0:
            return int(pid)
        if ctypes.get_errno() != errno.EEXIST:
            raise OSError(ctypes.get_errno(), "clone3")
        time.sleep(0.01)
    raise OSError(errno.EEXIST, f"tid {tid} was not freed")


def child_with_tid(tid: int) -> None:
    """Make the child with ``tid``, wait for it, print ``TID CHILD_PID``."""
    pid = fork_with_tid(tid)
    if pid == 0:
        os._exit(0)  # exit_group(2): the child's only syscall after clone3 returned
    os.waitpid(pid, 0)
    print(tid, pid, flush=True)


def exec_as_child() -> None:
    """(In a thread that is not the leader) exec this module as ``child TID``."""
    tid = threading.get_native_id()
    os.execv(sys.executable, [sys.executable, "-m", "tests.helpers.tid_reuse", "child", str(tid)])


def main() -> None:
    if sys.argv[1] == "child":  # the image a thread exec'ed (exec mode)
        child_with_tid(int(sys.argv[2]))
        return
    set_comm(sys.argv[1])
    sys.stdin.readline()  # the trace is attached
    if len(sys.argv) > 2 and sys.argv[2] == "exec":
        threading.Thread(target=exec_as_child).start()
        time.sleep(60)  # the exec ends this image
        return
    tids: list[int] = []
    thread = threading.Thread(target=lambda: tids.append(threading.get_native_id()))
    thread.start()
    thread.join()
    child_with_tid(tids[0])


if __name__ == "__main__":
    main()
