"""ringtool's bpffs pin root, ``/sys/fs/bpf/ringtool``: a directory only root can
change, used through a file descriptor.

Why: a bpffs mounted without ``-o mode=700`` has a root of mode 1777
(``bpf_fill_super`` in kernel/bpf/inode.c: ``S_ISVTX`` plus the mount's mode,
``S_IRWXUGO`` by default), so any user may create ``/sys/fs/bpf/ringtool`` before the
first trace does: a symbolic link to a directory of their choosing (that root would
then list and delete), or a directory of their own whose entries they make and lock.
Rules (docs/trace.md, "Markers"):

* the root is opened with ``O_DIRECTORY | O_NOFOLLOW`` (a symbolic link is refused,
  never followed) and checked on that descriptor: a directory owned by root or by our
  effective uid, with no group or other write bit; ringtool creates it mode 0700;
* its parent must not let another user rename or replace it: owned by root or us, and
  not writable by group or others unless sticky (in a sticky directory only an
  entry's owner may rename or remove it -- bpffs' own root is sticky);
* what is done under it is done relative to the descriptor: :func:`entries`,
  :func:`open_dir_at`, :func:`lock_at`, :func:`remove_at`, and :func:`fd_path` for the
  calls that take only a path (``BPF_OBJ_PIN``, ``BPF_OBJ_GET``, bpftool).

Anything else is :class:`UnsafeDirectoryError`, one line naming the path and the fix;
nothing in such a directory is used, locked or deleted.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import time

from ringtool.errors import UnsafeDirectoryError

#: Where every running trace pins its marker ring (``ringtool mark``).
PIN_ROOT = "/sys/fs/bpf/ringtool"
#: How long :func:`lock_at` waits for another process holding an entry's lock.
LOCK_WAIT_S = 5.0
_LOCK_POLL_S = 0.01
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


#: What :class:`UnsafeDirectoryError` tells to do about the pin root.
BPFFS_FIX = "and mount bpffs with -o mode=700 (see ringtool doctor)"


def _refuse(path: str, why: str, fix: str = BPFFS_FIX) -> UnsafeDirectoryError:
    return UnsafeDirectoryError(
        f"refusing {path}: {why}, so another user may have made it or may change it; "
        f"nothing in it is used or deleted: remove it (sudo rm -r {path}) {fix}".rstrip()
    )


def unsafe_reason(st: os.stat_result, *, sticky_ok: bool = False) -> str | None:
    """Why a directory of status ``st`` is not one only root (or our euid) can change,
    or None when it is. ``sticky_ok``: group/other write is fine when the sticky bit
    is set (a parent: others may add entries but not replace ours)."""
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid not in (0, os.geteuid()):
        return f"it is owned by uid {st.st_uid}"
    if st.st_mode & 0o022 and not (sticky_ok and st.st_mode & stat.S_ISVTX):
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def open_pin_root(
    path: str = PIN_ROOT, *, create: bool, fix: str = BPFFS_FIX, private: bool = False
) -> int | None:
    """An ``O_DIRECTORY | O_NOFOLLOW`` descriptor of the pin root ``path``, checked (see
    the module doc); created mode 0700 when missing and ``create``, else None when
    missing. :class:`UnsafeDirectoryError` when it or its parent fails a check (its
    message ends with ``fix``). ``private``: the directory must also have no group or
    other bit at all (mode 0700: another directory of root's only, such as the program
    cache, checked the same way). The caller closes the descriptor."""
    parent, name = os.path.split(os.path.abspath(path))
    try:
        pfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        if create:
            raise
        return None
    try:
        why = unsafe_reason(os.fstat(pfd), sticky_ok=True)
        if why is not None:
            raise _refuse(parent, why, fix)
        if create:
            try:
                os.mkdir(name, 0o700, dir_fd=pfd)
            except FileExistsError:
                pass
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=pfd)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ENOTDIR or ELOOP: a symbolic link or a file
            if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                raise
            link = stat.S_ISLNK(os.stat(name, dir_fd=pfd, follow_symlinks=False).st_mode)
            kind = "a symbolic link" if link else "not a directory"
            raise _refuse(path, f"it is {kind}", fix) from exc
    finally:
        os.close(pfd)
    st = os.fstat(fd)
    why = unsafe_reason(st)
    if why is None and private and st.st_mode & 0o077:
        why = f"its mode is {stat.S_IMODE(st.st_mode):04o}, not 0700"
    if why is not None:
        os.close(fd)
        raise _refuse(path, why, fix)
    return fd


def entries(dir_fd: int) -> list[str]:
    """The names in the directory ``dir_fd``."""
    return os.listdir(dir_fd)


def open_dir_at(dir_fd: int, name: str) -> int | None:
    """An ``O_DIRECTORY | O_NOFOLLOW`` descriptor of ``name`` in ``dir_fd``; None when
    it is gone (or is no directory). The caller closes it."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP):
            return None
        raise


def lock_at(dir_fd: int, wait_s: float = LOCK_WAIT_S) -> bool:
    """Take an exclusive ``flock`` of the directory ``dir_fd`` (dropped when it is
    closed), waiting at most ``wait_s``; False when another process held it all along
    (a stopped holder costs a bounded wait, not a hang)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(dir_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(_LOCK_POLL_S)


def remove_at(dir_fd: int, name: str) -> None:
    """Remove ``name`` in ``dir_fd`` and what it holds, walking by descriptors without
    following a symbolic link (``shutil.rmtree`` with ``dir_fd``); errors ignored."""
    shutil.rmtree(name, ignore_errors=True, dir_fd=dir_fd)


def fd_path(dir_fd: int, name: str = "") -> str:
    """A path to ``name`` in ``dir_fd`` that resolves through the descriptor
    (``/proc/self/fd/N``), for calls that take only a path: no other directory on the
    way. Valid in a child process only when it inherits ``dir_fd`` under the same
    number (``subprocess`` ``pass_fds``)."""
    base = f"/proc/self/fd/{dir_fd}"
    return f"{base}/{name}" if name else base


__all__ = [
    "BPFFS_FIX",
    "LOCK_WAIT_S",
    "PIN_ROOT",
    "entries",
    "fd_path",
    "lock_at",
    "open_dir_at",
    "open_pin_root",
    "remove_at",
    "unsafe_reason",
]
