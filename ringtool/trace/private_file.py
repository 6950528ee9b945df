"""Open an output file that holds traced data (``--pcap``) without trusting the path.

A capture holds other users' packets, and ringtool runs as root in directories other
users can write to (``/tmp``): a symlink planted there must not make root truncate the
file it points to, and a file another user created beforehand (mode 0666, owned by
them) must not receive the packets.

Contract of :func:`open_private`:

- a new file is created with ``O_CREAT|O_EXCL|O_NOFOLLOW``, mode 0600 (umask can only
  narrow it): a symlink at ``path``, dangling or not, is never followed;
- an existing file is refused (a :class:`UsageError` naming the path and ``--force``);
- with ``force`` an existing *regular* file is opened ``O_NOFOLLOW`` (a symlink is
  refused), must have one link (a hard link to another file is refused), is truncated,
  then made ours (``fchown`` to the effective uid/gid) and 0600 — through the open
  descriptor, so nothing can be swapped in between;
- with ``force`` a character device or FIFO (``/dev/null``) is written as it is,
  without changing its mode or owner; anything else is refused.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

from ringtool.errors import UsageError

#: Flags of every open: never follow a symlink, never leak the fd to a child.
_BASE = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def _fail(flag: str, path: Path, why: str) -> UsageError:
    return UsageError(f"{flag} {path}: {why}")


def _reopen(path: Path, flag: str) -> int:
    """``--force``: the existing file at ``path`` as an fd, made safe (see the module doc)."""
    try:
        fd = os.open(path, _BASE | os.O_NONBLOCK)  # a FIFO without a reader: ENXIO, no hang
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _fail(
                flag, path, "is a symbolic link: not followed; give the file itself"
            ) from None
        raise _fail(flag, path, exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode):
            if st.st_nlink != 1:
                raise _fail(flag, path, f"has {st.st_nlink} hard links: not overwritten")
            os.ftruncate(fd, 0)
            if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                os.fchown(fd, os.geteuid(), os.getegid())
            os.fchmod(fd, 0o600)
        elif not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise _fail(flag, path, "is not a regular file, a device or a FIFO")
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
