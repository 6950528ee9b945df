"""Open an output file that holds traced data (``--pcap``) without trusting the path.

A capture holds other users' packets, and ringtool runs as root in directories other
users can write to (``/tmp``): a symlink planted there must not make root truncate the
file it points to, and a file another user created beforehand (mode 0666, owned by
them) must not receive the packets.

Contract of :func:`open_private`:

- the directory part of ``path`` is looked up once, a component at a time from ``/``
  (or the working directory), into a directory fd, and every later step is relative to
  that fd (``openat``, ``fstatat``, ``renameat``): a link swapped in afterwards changes
  nothing. A symbolic link among those components is followed only when it is ours
  (owned by root or the effective uid) in a directory no other user can change (owned
  by root or us, and not writable by group/others unless sticky), so ``/var/run ->
  /run`` works; its target is walked by the same rules. Another user's link (one in
  their directory too) is refused: it could point root at any directory;
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

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from ringtool.errors import UsageError

#: Flags of every open: never follow a symlink, never leak the fd to a child.
_BASE = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC
#: A directory component: a handle for ``*at`` calls only, never through a symlink.
_DIR = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
#: Symbolic links followed in one lookup at most, as the kernel's ``MAXSYMLINKS``.
_MAX_LINKS = 40


def _fail(flag: str, path: Path, why: str) -> UsageError:
    return UsageError(f"{flag} {path}: {why}")


def _why(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _ours(uid: int) -> bool:
    return uid in (0, os.geteuid())


def _trusted_link(link: os.stat_result, parent: os.stat_result) -> bool:
    """Whether only root or we could have made or can change ``link`` in ``parent``."""
    shared = parent.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    return _ours(link.st_uid) and _ours(parent.st_uid) and (
        not shared or bool(parent.st_mode & stat.S_ISVTX))  # fmt: skip


def _step(fd: int, name: str, shown: str, flag: str, path: Path) -> tuple[int, str | None]:
    """Component ``name`` of the directory at ``fd``: ``(new fd, None)`` for a
    directory, ``(-1, target)`` for a symbolic link we trust (see the module doc)."""
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        if stat.S_ISLNK(st.st_mode):
            if not _trusted_link(st, os.fstat(fd)):
                why = "is a symbolic link another user could change: not followed"
                raise _fail(flag, path, f"{shown} {why}; give the real directory")
            return -1, os.readlink(name, dir_fd=fd)
        return os.open(name, _DIR, dir_fd=fd), None
    except OSError as exc:
        raise _fail(flag, path, f"{shown}: {_why(exc)}") from None


def _open_dir(path: Path, flag: str) -> int:
    """The directory holding ``path``, looked up once without following a link another
    user could change (module doc): an ``O_PATH`` fd the caller closes."""
    parent = os.fspath(path.parent)
    todo = [c for c in reversed(parent.split("/")) if c not in ("", ".")]
    shown = "/" if parent.startswith("/") else "."
    links = 0
    fd = os.open(shown, _DIR)
    try:
        while todo:
            name = todo.pop()
            shown = os.path.join(shown, name)
            new, target = _step(fd, name, shown, flag, path)
            if target is None:
                os.close(fd)
                fd = new
                continue
            links += 1
            if links > _MAX_LINKS:
                raise _fail(flag, path, f"{shown}: {os.strerror(errno.ELOOP)}")
            todo.extend(c for c in reversed(target.split("/")) if c not in ("", "."))
            if target.startswith("/"):
                os.close(fd)
                fd = os.open("/", _DIR)
        return fd
    except BaseException:
        os.close(fd)
        raise


def _temp_name(name: str) -> str:
    return f".{name}.{secrets.token_hex(8)}.ringtool"


def _replace(dir_fd: int, name: str, path: Path, flag: str) -> int:
    """``--force`` on a regular file: a new 0600 file renamed over it (module doc)."""
    try:
        tmp = _temp_name(name)
        fd = os.open(tmp, _BASE | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)
        try:
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            os.unlink(tmp, dir_fd=dir_fd)
            os.close(fd)
            raise
        return fd
    except OSError as exc:
        raise _fail(flag, path, _why(exc)) from None


def _check_owner(dir_fd: int, path: Path, st: os.stat_result, flag: str) -> None:
    """Refuse a device/FIFO ``st`` at ``path`` that another user could read from."""
    if not _ours(st.st_uid):
        raise _fail(flag, path, f"is a device or FIFO of uid {st.st_uid}: not written "
                                f"(another user would read the packets)")  # fmt: skip
    try:
        parent = os.fstat(dir_fd).st_mode
    except OSError as exc:
        raise _fail(flag, path, _why(exc)) from None
    if parent & stat.S_ISVTX and parent & stat.S_IWOTH:
        raise _fail(flag, path, "is a device or FIFO in a sticky directory anyone can "
                                "write to: not written; give a path elsewhere")  # fmt: skip


def _reopen(dir_fd: int, name: str, path: Path, flag: str) -> int:
    """``--force``: the existing file ``name`` in ``dir_fd`` replaced, or the
    device/FIFO there opened as it is (see the module doc)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError as exc:
        raise _fail(flag, path, _why(exc)) from None
    if stat.S_ISLNK(st.st_mode):
        raise _fail(flag, path, "is a symbolic link: not followed; give the file itself")
    if stat.S_ISREG(st.st_mode):
        if st.st_nlink != 1:
            raise _fail(flag, path, f"has {st.st_nlink} hard links: not overwritten")
        return _replace(dir_fd, name, path, flag)
    if not (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        raise _fail(flag, path, "is not a regular file, a device or a FIFO")
    _check_owner(dir_fd, path, st, flag)
    try:  # a FIFO without a reader: ENXIO, no hang
        fd = os.open(name, _BASE | os.O_NONBLOCK, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _fail(
                flag, path, "is a symbolic link: not followed; give the file itself"
            ) from None
        raise _fail(flag, path, _why(exc)) from None
    try:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):  # swapped since the lstat
            raise _fail(flag, path, "changed while it was opened: not written")
        os.set_blocking(fd, True)
    except OSError as exc:
        os.close(fd)
        raise _fail(flag, path, _why(exc)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_private(path: Path, *, force: bool = False, flag: str = "--pcap") -> BinaryIO:
    """``path`` opened for writing, binary (see the module doc); a path that cannot
    be used is a one-line :class:`UsageError` naming ``flag`` and the path."""
    try:
        dir_fd = _open_dir(path, flag)
    except OSError as exc:  # "/" or the working directory itself
        raise _fail(flag, path, _why(exc)) from None
    try:
        fd = os.open(path.name, _BASE | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)
    except FileExistsError:
        if not force:
            raise _fail(flag, path, "exists: add --force to overwrite it") from None
        fd = _reopen(dir_fd, path.name, path, flag)
    except OSError as exc:
        raise _fail(flag, path, _why(exc)) from None
    finally:
        os.close(dir_fd)
    return os.fdopen(fd, "wb")


def private_dir(path: Path, flag: str) -> int:
    """The directory ``path``, created 0700 when missing, looked up as
    :func:`open_private` looks up a file's directory (its last component is never a
    symbolic link): an ``O_PATH`` fd for the ``*at`` calls of :func:`subdir_at` and
    :func:`create_at`, the caller's to close. An existing directory must be ours (root
    or the effective uid) and not writable by others: another user could swap its
    entries for links; a UsageError naming ``flag`` otherwise."""
    try:
        parent = _open_dir(path / "_", flag) if path.name == "" else _open_dir(path, flag)
    except OSError as exc:
        raise _fail(flag, path, _why(exc)) from None
    if path.name == "":  # "/" or "."
        return parent
    try:
        return subdir_at(parent, path.name, path, flag)
    finally:
        os.close(parent)


def subdir_at(dir_fd: int, name: str, path: Path, flag: str) -> int:
    """Directory ``name`` of ``dir_fd``, created 0700 when missing, opened without
    following a symbolic link; checked as :func:`private_dir` says (``path`` names it in
    the messages)."""
    try:
        os.mkdir(name, 0o700, dir_fd=dir_fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise _fail(flag, path, _why(exc)) from None
    try:
        fd = os.open(name, _DIR, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _fail(
                flag, path, "is not a directory (a symbolic link is not followed)"
            ) from None
        raise _fail(flag, path, _why(exc)) from None
    try:
        st = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise _fail(flag, path, _why(exc)) from None
    why = (f"is uid {st.st_uid}'s directory" if not _ours(st.st_uid) else
           "is a directory others can write to" if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
           else "")  # fmt: skip
    if why:
        os.close(fd)
        raise _fail(flag, path, f"{why}: give a directory of your own (mode 0700)")
    return fd


def create_at(dir_fd: int, name: str, path: Path, flag: str) -> BinaryIO | None:
    """A new file ``name`` in ``dir_fd``, created ``O_CREAT|O_EXCL|O_NOFOLLOW`` mode
    0600, for writing; None when the name exists (the caller picks another)."""
    try:
        fd = os.open(name, _BASE | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)
    except FileExistsError:
        return None
    except OSError as exc:
        raise _fail(flag, path, _why(exc)) from None
    return os.fdopen(fd, "wb")


def replace_at(dir_fd: int, name: str, data: bytes, path: Path, flag: str) -> None:
    """``name`` in ``dir_fd`` replaced at once by a new 0600 file holding ``data`` (a
    temporary name, written, synced, renamed over it: a reader sees the old or the new
    whole)."""
    write_replacing(dir_fd, name, _temp_name(name), lambda f: f.write(data), path, flag)


def write_replacing(dir_fd: int, name: str, tmp: str, write: Callable[[BinaryIO], object],
                    path: Path, flag: str) -> None:  # fmt: skip
    """A new 0600 file ``tmp`` of ``dir_fd`` (``O_CREAT|O_EXCL|O_NOFOLLOW``) filled by
    ``write``, synced and renamed to ``name``: a reader sees the old file or the new one
    whole. On any failure the temporary file is removed; an OSError is a UsageError
    naming ``flag`` and ``path``."""
    try:
        fd = os.open(tmp, _BASE | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as f:
                write(f)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dir_fd)
            raise
    except OSError as exc:
        raise _fail(flag, path, _why(exc)) from None


__all__ = ["create_at", "open_private", "private_dir", "replace_at", "subdir_at",
           "write_replacing"]  # fmt: skip
