"""Open an output file that holds traced data (``--pcap``) without trusting the path.

A capture holds other users' packets, and ringtool runs as root in directories other
users can write to (``/tmp``): a symlink planted there must not make root truncate the
file it points to, and a file another user created beforehand (mode 0666, owned by
them) must not receive the packets.

Contract of :func:`open_private`:

- a new file is created with ``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600 (umask can only
  narrow it): a symlink at ``path``, dangling or not, is never followed;
- an existing file is refused (a :class:`UsageError` naming the path and ``--force``);
- with ``force`` an existing *regular* file (a symlink is refused; one with more than
  one link too) is *replaced*, never written: a new file is created 0600 with
  ``O_CREAT|O_EXCL|O_NOFOLLOW`` under a random name in the same directory and renamed
  over it at once. A process that opened the old file beforehand (its owner, say)
  keeps reading that old inode, which receives nothing; the new file is ours (the
  effective uid/gid) and 0600 from its creation;
- with ``force`` a character device or FIFO (``/dev/null``, a pipe root made) is
  written as it is, without changing its mode or owner, when root or the effective
  uid owns it and it is not in a sticky directory anyone can write to (``/tmp``):
  another user's FIFO or device there would receive the packets (``O_CREAT`` is not
  used, so ``fs.protected_fifos`` does not apply). Anything else is refused.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

from ringtool.errors import UsageError

#: Flags of every open: never follow a symlink, never leak the fd to a child.
_BASE = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def _fail(flag: str, path: Path, why: str) -> UsageError:
    return UsageError(f"{flag} {path}: {why}")


def _temp_name(path: Path) -> str:
    return f".{path.name}.{secrets.token_hex(8)}.ringtool"


def _replace(path: Path, flag: str) -> int:
    """``--force`` on a regular file: a new 0600 file renamed over it (module doc)."""
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise _fail(flag, path, exc.strerror or str(exc)) from None
    try:
        tmp = _temp_name(path)
        fd = os.open(tmp, _BASE | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)
        try:
            os.rename(tmp, path.name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(tmp, dir_fd=dir_fd)
            os.close(fd)
            raise
        return fd
    except OSError as exc:
        raise _fail(flag, path, exc.strerror or str(exc)) from None
    finally:
        os.close(dir_fd)


def _check_owner(path: Path, st: os.stat_result, flag: str) -> None:
    """Refuse a device/FIFO ``st`` at ``path`` that another user could read from."""
    if st.st_uid not in (0, os.geteuid()):
        raise _fail(flag, path, f"is a device or FIFO of uid {st.st_uid}: not written "
                                f"(another user would read the packets)")  # fmt: skip
    try:
        parent = os.stat(path.parent).st_mode
    except OSError as exc:
        raise _fail(flag, path, exc.strerror or str(exc)) from None
    if parent & stat.S_ISVTX and parent & stat.S_IWOTH:
        raise _fail(flag, path, "is a device or FIFO in a sticky directory anyone can "
                                "write to: not written; give a path elsewhere")  # fmt: skip


def _reopen(path: Path, flag: str) -> int:
    """``--force``: the existing file at ``path`` replaced, or the device/FIFO there
    opened as it is (see the module doc)."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise _fail(flag, path, exc.strerror or str(exc)) from None
    if stat.S_ISLNK(st.st_mode):
        raise _fail(flag, path, "is a symbolic link: not followed; give the file itself")
    if stat.S_ISREG(st.st_mode):
        if st.st_nlink != 1:
            raise _fail(flag, path, f"has {st.st_nlink} hard links: not overwritten")
        return _replace(path, flag)
    if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        raise _fail(flag, path, "is not a regular file, a device or a FIFO")
    _check_owner(path, st, flag)
    try:
        fd = os.open(path, _BASE | os.O_NONBLOCK)  # a FIFO without a reader: ENXIO, no hang
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _fail(
                flag, path, "is a symbolic link: not followed; give the file itself"
            ) from None
        raise _fail(flag, path, exc.strerror or str(exc)) from None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):  # swapped since the lstat
            raise _fail(flag, path, "changed while it was opened: not written")
        os.set_blocking(fd, True)
    except OSError as exc:
        os.close(fd)
        raise _fail(flag, path, exc.strerror or str(exc)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private(path: Path, *, force: bool = False, flag: str = "--pcap") -> BinaryIO:
    """``path`` opened for writing, binary (see the module doc); a path that cannot
    be used is a one-line :class:`UsageError` naming ``flag`` and the path."""
    try:
        fd = os.open(path, _BASE | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if not force:
            raise _fail(flag, path, "exists: add --force to overwrite it") from None
        fd = _reopen(path, flag)
    except OSError as exc:
        raise _fail(flag, path, exc.strerror or str(exc)) from None
    return os.fdopen(fd, "wb")


__all__ = ["open_private"]
