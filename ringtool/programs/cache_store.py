"""Where compiled programs are kept between runs (docs/trace.md, "Program cache"):
the key of a compile and the directory of entries.

The key (:func:`cache_key`) is a sha256 over everything the compiled program depends
on: every file of ``bpf/`` (name and bytes), the file compiled, the caller's ``-D``
constants (a ``*_FD`` constant by its name: its fd is patched at load), what the
program needs of the kernel and the code that turns that into ``-D`` constants, the
kernel's release and version (``uname -r``, ``uname -v``), BCC's version, ringtool's
version and the entry format's. A changed source, flag or kernel is another key: a
stale program is never loaded.

The directory (:class:`ProgramStore`; ``/var/cache/ringtool/programs``, or
``$RINGTOOL_CACHE_DIR``) is root's only: created mode 0700, opened without following
a symbolic link and checked on its descriptor (owner root or us, mode 0700; its
parent owned by root or us and not writable by others:
:func:`ringtool.kernel.pin_root.open_pin_root`), else an
:class:`ringtool.errors.UnsafeDirectoryError`. Entries are ``KEY.prog`` files written
to a temporary file and renamed into place (two traces compiling at once each write
a whole entry; the last rename wins). Each write prunes the directory to its bound
(:mod:`ringtool.programs.cache_prune`: entries unused for 30 days go, and beyond the
newest 64 the oldest), and each load marks its entry used.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ringtool.bpf_files import bpf_dir
from ringtool.errors import UnsafeDirectoryError
from ringtool.kernel.needs import KernelNeeds
from ringtool.kernel.pin_root import open_pin_root
from ringtool.programs.cache_entry import FORMAT_VERSION, DamagedEntry, Entry, decode, encode
from ringtool.programs.cache_prune import DEFAULT_BOUND, Bound, prune, touch_if_old

DEFAULT_DIR = "/var/cache/ringtool/programs"
ENV_DIR = "RINGTOOL_CACHE_DIR"
#: Set to 1 to compile every time (the same as ``ringtool trace --no-cache``).
ENV_OFF = "RINGTOOL_NO_CACHE"
FIX = "and let ringtool create it again (mode 0700), or set RINGTOOL_CACHE_DIR"
_SUFFIX = ".prog"
_OBJECT = ".o"


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


#: The modules that turn a program's KernelNeeds into -D constants: the key holds
#: their code (the constants themselves follow from it and the kernel).
_DEFINE_MAKERS = ("kernel_features.py", "tracepoints.py", "tp_presence.py", "loader.py")


def _source_paths(bpf: Path | None) -> list[Path]:
    here = Path(__file__).parent
    return [*sorted(p for p in (bpf or bpf_dir()).iterdir() if p.is_file()),
            *(here / name for name in _DEFINE_MAKERS)]  # fmt: skip


def sources_digest(bpf: Path | None = None) -> str:
    """The hex sha256 of every file of ``bpf`` (:func:`ringtool.bpf_files.bpf_dir`
    when None) and of the modules that make ``-D`` constants, names and bytes."""
    h = hashlib.sha256()
    for path in _source_paths(bpf):
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def sources_stamp(bpf: Path | None = None) -> tuple[tuple[str, int, int, int], ...]:
    """Name, inode, size and modification time (ns) of each file :func:`sources_digest`
    reads: while it is the same, so are the files (a store keeps the digest that long)."""
    here = Path(__file__).parent
    stamps = []
    with os.scandir(bpf or bpf_dir()) as entries:
        for entry in entries:
            if entry.is_file():
                st = entry.stat()
                stamps.append((entry.name, st.st_ino, st.st_size, st.st_mtime_ns))
    stamps.sort()
    for name in _DEFINE_MAKERS:
        st = os.stat(here / name)
        stamps.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(stamps)


def kernel_id() -> str:
    """The running kernel as the key has it: ``uname -r``, ``uname -v``, ``uname -m``."""
    u = os.uname()
    return f"{u.release} {u.version} {u.machine}"


def cache_key(
    filename: str,
    defines: Mapping[str, int | str],
    needs: KernelNeeds,
    *,
    version: str = "",
    kernel: str | None = None,
    bpf: Path | None = None,
    sources: str | None = None,
    bcc: str | None = None,
) -> str:
    """The key (hex sha256) of compiling ``bpf/<filename>`` with the caller's
    ``defines`` and what the program ``needs`` of the kernel (the ``-D`` constants the
    loader derives from them depend on the kernel and the code in the key only, so
    they are not computed here: that reads the kernel's BTF, a good part of a start),
    on ``kernel`` (:func:`kernel_id` when None) and BCC, by ringtool ``version``, from
    the sources in ``bpf`` (:func:`ringtool.bpf_files.bpf_dir` when None; ``sources``:
    their :func:`sources_digest`, and ``bcc``: :func:`bcc_version`, when the caller has
    them)."""
    h = hashlib.sha256()
    for part in (f"format {FORMAT_VERSION}", f"ringtool {version}", f"bcc {bcc or bcc_version()}",
                 f"kernel {kernel_id() if kernel is None else kernel}", f"file {filename}",
                 f"needs {needs!r}", f"sources {sources or sources_digest(bpf)}"):  # fmt: skip
        h.update(part.encode() + b"\n")
    for name in sorted(defines):
        value = name if name.endswith("_FD") else defines[name]
        h.update(f"-D{name}={value}\n".encode())
    return h.hexdigest()


def cache_dir() -> str:
    """The cache directory: ``$RINGTOOL_CACHE_DIR`` or :data:`DEFAULT_DIR`."""
    return os.environ.get(ENV_DIR) or DEFAULT_DIR


def cache_disabled() -> bool:
    """``$RINGTOOL_NO_CACHE`` is set (to anything but ``0`` or empty)."""
    return os.environ.get(ENV_OFF, "") not in ("", "0")


class ProgramStore:
    """The entries in the directory ``path`` (see the module doc), opened on first use
    (``create``: made when missing), of ringtool ``version`` on ``kernel`` (both part of
    every key; None: :func:`kernel_id`), from the sources in ``bpf`` (None:
    :func:`ringtool.bpf_files.bpf_dir`), pruned to ``bound`` at each write.
    :class:`UnsafeDirectoryError` from any method when the directory fails its checks."""

    def __init__(
        self,
        path: str | None = None,
        *,
        create: bool = True,
        version: str = "",
        kernel: str | None = None,
        bound: Bound = DEFAULT_BOUND,
        bpf: Path | None = None,
    ) -> None:
        self.path = path or cache_dir()
        self.bound = bound
        self.create = create
        self.version = version
        self.kernel = kernel  # the key's kernel part (None: the running kernel's)
        self._sources: tuple[tuple[tuple[str, int, int, int], ...], str] | None = None
        self._bcc: str | None = None
        self._bpf = bpf  # the sources (None: bpf_dir())
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

    def open(self) -> None:
        """Open (and with ``create`` make) the directory now, so that a directory that
        fails its checks is known before the first entry is looked up."""
        self._dir()

    def key(self, filename: str, defines: Mapping[str, int | str], needs: KernelNeeds) -> str:
        """:func:`cache_key` with this store's ringtool version and kernel; the sources'
        digest is read once and kept while their :func:`sources_stamp` stays the same,
        BCC's version is read once."""
        stamp = sources_stamp(self._bpf)
        if self._sources is None or self._sources[0] != stamp:
            self._sources = (stamp, sources_digest(self._bpf))
        self._bcc = self._bcc or bcc_version()
        return cache_key(filename, defines, needs, version=self.version, kernel=self.kernel,
                         sources=self._sources[1], bcc=self._bcc)  # fmt: skip

    def load(self, key: str) -> Entry | None:
        """The entry of ``key``; None when there is none. A damaged one (not a regular
        file of root's or ours, or :func:`~ringtool.programs.cache_entry.decode`
        refuses it) is :class:`DamagedEntry` (the caller :meth:`remove` s it)."""
        data = self._read(key, _SUFFIX)
        return None if data is None else decode(data)

    def _read(self, key: str, suffix: str) -> bytes | None:
        fd = self._dir()
        if fd is None:
            return None
        try:
            f = os.open(key + suffix, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise DamagedEntry(f"entry {key[:12]} can't be opened: {exc.strerror}") from exc
        try:
            st = os.fstat(f)
            if not stat.S_ISREG(st.st_mode) or st.st_uid not in (0, os.geteuid()):
                raise DamagedEntry(f"entry {key[:12]} is not a file of root's")
            touch_if_old(f, st.st_mtime)  # used: the newest are what pruning keeps
            with os.fdopen(f, "rb", closefd=False) as stream:
                return stream.read()
        finally:
            os.close(f)

    def store(self, key: str, entry: Entry) -> None:
        """Write ``entry`` as ``key``'s (a temporary file renamed into place)."""
        self._write(key, _SUFFIX, encode(entry))

    def _write(self, key: str, suffix: str, data: bytes) -> None:
        fd = self._dir()
        if fd is None:
            return
        tmp = f".{key}{suffix}.{os.getpid()}.tmp"
        f = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                    0o600, dir_fd=fd)  # fmt: skip
        try:
            with os.fdopen(f, "wb") as stream:
                stream.write(data)
            os.rename(tmp, key + suffix, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=fd)
            except OSError:
                pass
            raise
        try:
            prune(fd, key + suffix, self.bound)
        except OSError:
            pass  # the entry is written; the next write prunes again

    def remove(self, key: str, suffix: str = _SUFFIX) -> None:
        """Delete ``key``'s entry (gone already: nothing)."""
        fd = self._dir()
        if fd is not None:
            try:
                os.unlink(key + suffix, dir_fd=fd)
            except FileNotFoundError:
                pass

    def load_object(self, key: str) -> bytes | None:
        """The object file (clang's output) kept as ``key``'s; None when there is none.
        One whose checksum does not match is a :class:`DamagedEntry`."""
        raw = self._read(key, _OBJECT)
        if raw is None:
            return None
        digest, sep, data = raw.partition(b"\n")
        if not sep or hashlib.sha256(data).hexdigest().encode() != digest:
            raise DamagedEntry(f"object {key[:12]}: its checksum does not match")
        return data

    def store_object(self, key: str, data: bytes) -> None:
        """Keep the object file ``data`` as ``key``'s (with its checksum)."""
        self._write(key, _OBJECT, hashlib.sha256(data).hexdigest().encode() + b"\n" + data)

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
    "sources_digest",
    "sources_stamp",
]
