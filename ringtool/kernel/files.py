"""Reading a small file a user named (credentials, a CA bundle, a config file) without
blocking and without reading for ever.

:func:`read_regular` stats the path first and refuses anything but a regular file
before opening it: opening a FIFO blocks until a writer comes (and a signal does not end
a blocked ``open``), and a device such as ``/dev/zero`` never ends. The open itself is
``O_NONBLOCK`` (a FIFO put in its place after the stat cannot block it) and the open
file is checked again with ``fstat``; then at most ``limit`` bytes are read. Symbolic
links are followed: CA bundles and config files are often links (``/etc/ssl/certs``).

A message about such a file says where and what is wrong, never what it holds (it may
be ``/etc/shadow``): :func:`utf8_text` names the line and column of a byte that is not
UTF-8.
"""

from __future__ import annotations

import os
import stat

from ringtool.errors import InputFileError

#: What a file of each kind is called in a message.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _require_regular(path: str, mode: int) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    raise InputFileError(path, f"{kind}, not a regular file: give a file")


def _size_text(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n >> 10} KiB"


def open_regular(path: str | os.PathLike[str]) -> int:
    """A read-only fd (``O_NONBLOCK``) of the regular file ``path``, the caller's to
    close; stat before open and fstat after it, as the module doc says. Raises
    :class:`InputFileError` for anything but a regular file, ``OSError`` as the OS
    reports it."""
    name = os.fsdecode(path)
    _require_regular(name, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        _require_regular(name, os.fstat(fd).st_mode)  # replaced after the stat?
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """The contents of the regular file ``path``, which must hold at most ``limit``
    bytes. Raises :class:`InputFileError` for a path that is not a regular file or a
    larger file, and ``OSError`` as the OS reports it (ENOENT, EACCES, ENAMETOOLONG,
    ELOOP, ...)."""
    name = os.fsdecode(path)
    fd = open_regular(path)
    try:
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise InputFileError(name, f"larger than {_size_text(limit)}: not a file of this kind")
    return data


def utf8_text(data: bytes) -> str:
    """``data`` decoded as UTF-8; a ValueError ``not UTF-8 text (line N, column M)``
    naming where the first bad byte is (1-based; the column counts bytes), never the
    bytes themselves."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise ValueError(f"not UTF-8 text (line {line}, column {column})") from None


__all__ = ["open_regular", "read_regular", "utf8_text"]
