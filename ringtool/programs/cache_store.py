"""Where compiled programs are kept between runs (docs/trace.md, "Program cache"):
the key of a compile and the directory of entries.

The key (:func:`cache_key`) is a sha256 over everything the compiled program depends
on: every file of ``bpf/`` (name and bytes), the file compiled, the ``-D`` constants
(a ``*_FD`` constant by its name: its fd is patched at load), the kernel's release and
version (``uname -r``, ``uname -v``), BCC's version, ringtool's version and the entry
format's. A changed source, flag or kernel is another key: a stale program is never
loaded.

The directory (:class:`ProgramStore`; ``/var/cache/ringtool/programs``, or
``$RINGTOOL_CACHE_DIR``) is root's only: created mode 0700, opened without following
a symbolic link and checked on its descriptor (owner root or us, mode 0700; its
parent owned by root or us and not writable by others:
:func:`ringtool.kernel.pin_root.open_pin_root`), else an
:class:`ringtool.errors.UnsafeDirectoryError`. Entries are ``KEY.prog`` files written
to a temporary file and renamed into place (two traces compiling at once each write
a whole entry; the last rename wins).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path

from ringtool.bpf_files import bpf_dir
from ringtool.errors import UnsafeDirectoryError
from ringtool.kernel.pin_root import open_pin_root
from ringtool.programs.cache_entry import FORMAT_VERSION, DamagedEntry, Entry, decode, encode

DEFAULT_DIR = "/var/cache/ringtool/programs"
ENV_DIR = "RINGTOOL_CACHE_DIR"
#: Set to 1 to compile every time (the same as ``ringtool trace --no-cache``).
ENV_OFF = "RINGTOOL_NO_CACHE"
FIX = "and let ringtool create it again (mode 0700), or set RINGTOOL_CACHE_DIR"
_SUFFIX = ".prog"


def bcc_version() -> str:
    """BCC's version, read from its ``version.py`` without importing BCC (which takes
    about 0.3 s); ``"none"`` when BCC is not installed."""
    spec = importlib.util.find_spec("bcc")
    if spec is None or not spec.submodule_search_locations:
        return "none"
    for where in spec.submodule_search_locations:
        try:
            return Path(where, "version.py").read_text().strip()
        except OSError:
            continue
    return "unknown"


def _sources() -> Iterator[bytes]:
    root = bpf_dir()
    for path in sorted(root.iterdir()):
        if path.is_file():
            yield path.name.encode() + b"\0" + path.read_bytes() + b"\0"


def cache_key(filename: str, defines: Mapping[str, int | str], version: str = "") -> str:
    """The key (hex sha256) of compiling ``bpf/<filename>`` with ``defines`` on this
    kernel and BCC by ringtool ``version`` (see the module doc)."""
    h = hashlib.sha256()
    u = os.uname()
    for part in (
        f"format {FORMAT_VERSION}",
        f"ringtool {version}",
        f"bcc {bcc_version()}",
        f"kernel {u.release} {u.version} {u.machine}",
        f"file {filename}",
    ):
        h.update(part.encode() + b"\n")
    for name in sorted(defines):
        value = name if name.endswith("_FD") else defines[name]
        h.update(f"-D{name}={value}\n".encode())
    for chunk in _sources():
        h.update(chunk)
    return h.hexdigest()


def cache_dir() -> str:
    """The cache directory: ``$RINGTOOL_CACHE_DIR`` or :data:`DEFAULT_DIR`."""
    return os.environ.get(ENV_DIR) or DEFAULT_DIR


def cache_disabled() -> bool:
    """``$RINGTOOL_NO_CACHE`` is set (to anything but ``0`` or empty)."""
    return os.environ.get(ENV_OFF, "") not in ("", "0")


class ProgramStore:
    """The entries in the directory ``path`` (see the module doc), opened on first use
    (``create``: made when missing), of ringtool ``version`` (part of every key).
    :class:`UnsafeDirectoryError` from any method when the directory fails its checks."""

    def __init__(self, path: str | None = None, *, create: bool = True, version: str = "") -> None:
        self.path = path or cache_dir()
        self.create = create
        self.version = version
        self._fd: int | None = None

    def _dir(self) -> int | None:
        if self._fd is None:
            parent = os.path.dirname(os.path.abspath(self.path))
            if self.create and self.path == DEFAULT_DIR and not os.path.isdir(parent):
                try:
                    os.mkdir(parent, 0o700)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise UnsafeDirectoryError(f"cannot create {parent}: {exc}") from exc
            self._fd = open_pin_root(self.path, create=self.create, fix=FIX, private=True)
        return self._fd

    def key(self, filename: str, defines: Mapping[str, int | str]) -> str:
        """:func:`cache_key` with this store's ringtool version."""
        return cache_key(filename, defines, self.version)

    def load(self, key: str) -> Entry | None:
        """The entry of ``key``; None when there is none. A damaged one (not a regular
        file of root's or ours, or :func:`~ringtool.programs.cache_entry.decode`
        refuses it) is :class:`DamagedEntry` (the caller :meth:`remove` s it)."""
        fd = self._dir()
        if fd is None:
            return None
        try:
            f = os.open(key + _SUFFIX, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise DamagedEntry(f"entry {key[:12]} can't be opened: {exc.strerror}") from exc
        try:
            st = os.fstat(f)
            if not stat.S_ISREG(st.st_mode) or st.st_uid not in (0, os.geteuid()):
                raise DamagedEntry(f"entry {key[:12]} is not a file of root's")
            with os.fdopen(f, "rb", closefd=False) as stream:
                data = stream.read()
        finally:
            os.close(f)
        return decode(data)

    def store(self, key: str, entry: Entry) -> None:
        """Write ``entry`` as ``key``'s (a temporary file renamed into place)."""
        fd = self._dir()
        if fd is None:
            return
        tmp = f".{key}.{os.getpid()}.tmp"
        f = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
            dir_fd=fd,
        )
        try:
            with os.fdopen(f, "wb") as stream:
                stream.write(encode(entry))
            os.rename(tmp, key + _SUFFIX, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise

    def remove(self, key: str) -> None:
        """Delete ``key``'s entry (gone already: nothing)."""
        fd = self._dir()
        if fd is not None:
            try:
                os.unlink(key + _SUFFIX, dir_fd=fd)
            except FileNotFoundError:
                pass

    def has(self, key: str) -> bool:
        """An entry of ``key`` is there (not checked: :meth:`load` checks)."""
        fd = self._dir()
        if fd is None:
            return False
        try:
            os.stat(key + _SUFFIX, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return True

    def close(self) -> None:
        """Close the directory's descriptor (the store can be used again)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


__all__ = [
    "DEFAULT_DIR",
    "ENV_DIR",
    "ENV_OFF",
    "ProgramStore",
    "bcc_version",
    "cache_dir",
    "cache_disabled",
    "cache_key",
]
