"""Command-line paths, checked while parsing (the path half of :mod:`ringtool.cli.validate`,
with its messages and rules).

An output file must be a file (not a directory) in an existing, writable directory; a
file to read is read here, as :func:`ringtool.kernel.files.read_regular` reads (stat
before open: a FIFO or a device is refused, never opened; at most a size limit), and
checked by its parser, so every problem with it names the flag. A path in a message is
cut to :data:`ringtool.cli.validate.SHOWN_MAX` characters.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ringtool.cli.validate import SOCKET_PATH_MAX, bad, shown
from ringtool.errors import InputFileError, RingtoolError
from ringtool.kernel.files import read_regular

if TYPE_CHECKING:
    from ringtool.trace.reading.filters import CgroupFilter


def cgroup_dir(text: str) -> CgroupFilter:
    """A cgroup v2 directory (:func:`ringtool.trace.reading.filters.resolve_cgroup`)."""
    from ringtool.errors import CgroupPathError
    from ringtool.trace.reading.filters import resolve_cgroup

    try:
        return resolve_cgroup(text)
    except CgroupPathError as exc:
        message = str(exc)  # "PATH: why", with PATH cut as messages show it
        bad(shown(text) + message[len(text) :] if message.startswith(text) else message)


def socket_path(text: str) -> str:
    """A UNIX socket path: not empty, at most 107 bytes (sun_path)."""
    raw = os.fsencode(text)
    if not raw:
        bad("the socket path is empty")
    if len(raw) > SOCKET_PATH_MAX:
        bad(f"the socket path is {len(raw)} bytes: a UNIX socket path holds {SOCKET_PATH_MAX}")
    if b"\0" in raw:
        bad("the socket path contains a NUL byte")
    return text


def output_file(text: str) -> Path:
    """A file to create or overwrite: not a directory, in an existing directory that this
    process may write to (an existing file must be writable)."""
    if not text:
        bad("the file name is empty")
    path = Path(text)
    try:
        st = path.stat()
    except FileNotFoundError:
        st = None
    except OSError as exc:
        bad(f"{shown(text)}: {exc.strerror}")
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            bad(f"{shown(text)} is a directory: give a file name")
        if not os.access(path, os.W_OK):
            bad(f"{shown(text)}: not writable")
        return path
    parent = path.parent
    try:
        parent_st = parent.stat()
    except OSError as exc:
        bad(f"{shown(text)}: directory {shown(str(parent))}: {exc.strerror}")
    if not stat.S_ISDIR(parent_st.st_mode):
        bad(f"{shown(text)}: {shown(str(parent))} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        bad(f"{shown(text)}: directory {shown(str(parent))} is not writable")
    return path


def input_file(
    limit: int, parse: Callable[[bytes, Path], object] | None = None, *, optional: bool = False
) -> Callable[[str], Path]:
    """A ``type=`` for a file that is read: a regular file (no FIFO, device or
    directory; checked before it is opened) of at most ``limit`` bytes that this
    process can read, whose contents ``parse(data, path)`` accepts (it raises a
    RingtoolError for bad contents). With ``optional`` a missing file is allowed (it
    means defaults)."""

    def check(text: str) -> Path:
        if not text:
            bad("the file name is empty")
        path = Path(text)
        try:
            data = read_regular(path, limit)
        except FileNotFoundError as exc:
            if optional:
                return path
            bad(f"{shown(text)}: {exc.strerror}")
        except InputFileError as exc:
            bad(f"{shown(text)}: {exc.why}")
        except OSError as exc:
            bad(f"{shown(text)}: {exc.strerror}")
        if parse is not None:
            try:
                parse(data, Path(shown(text)))  # the path as the message shows it
            except RingtoolError as exc:
                bad(str(exc))
        return path

    return check


__all__ = ["cgroup_dir", "input_file", "output_file", "socket_path"]
