"""The ``bpf/*.bpf.c`` programs BCC cannot load: built with clang, loaded by libbpf.

BCC 0.26 declares the ``bpf_user_ringbuf_drain()`` helper but cannot load a program
that calls it: the callback is a BPF subprogram named by an ld_imm64 with src_reg
BPF_PSEUDO_FUNC, a relocation BCC never applies (the verifier says "R2 type=scalar
expected=func"), and it has no table type for BPF_MAP_TYPE_USER_RINGBUF. So these
programs are plain libbpf C: Debian's ``clang-14`` compiles them (``-target bpf``,
constants as ``-D``) and Debian's ``bpftool prog load`` (libbpf) loads the object and
pins the program and its maps under a bpffs directory; ringtool takes fds of the pins
with ``BPF_OBJ_GET``. Maps that already exist are passed by their pins (``map name N
pinned PATH``: libbpf reuses them when type, sizes and flags match the declaration).
:func:`load_in_process` does the same with libbpf in ringtool's own process
(:mod:`ringtool.kernel.libbpf`), maps passed by fd: no bpftool process per load.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from collections.abc import Mapping, Sequence
from pathlib import Path

from ringtool.bpf_files import bpf_dir, bpf_file
from ringtool.errors import KernelFeatureError, RingtoolError
from ringtool.kernel import libbpf
from ringtool.kernel.needs import NO_NEEDS
from ringtool.programs.cache_entry import DamagedEntry
from ringtool.programs.cache_store import ProgramStore
from ringtool.programs.loader import BpfCompileError

_TIMEOUT_S = 120


def _tool(*names: str) -> str:
    for name in names:
        path = shutil.which(name) or (
            f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None
        )
        if path:
            return path
    raise KernelFeatureError(
        f"{names[0]} is not installed: needed to build and load bpf/*.bpf.c programs "
        "(install clang-14 and bpftool; `make setup` does)"
    )


def missing_tools() -> list[str]:
    """The tools this module needs that are not installed (clang-14 or clang, bpftool)."""
    missing = []
    for names in (("clang-14", "clang"), ("bpftool",)):
        try:
            _tool(*names)
        except KernelFeatureError:
            missing.append(names[0])
    return missing


def _run(cmd: list[str], what: str, pass_fds: Sequence[int] = ()) -> None:
    import subprocess  # here: a warm start runs neither clang nor bpftool

    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=_TIMEOUT_S,
                              check=False, pass_fds=pass_fds)  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise BpfCompileError(f"{what} took over {_TIMEOUT_S} s") from exc
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr or done.stdout).splitlines() if ln.strip()]
        raise BpfCompileError(f"{what} failed: {' | '.join(lines[-6:]) or done.returncode}")


def load_pinned(
    filename: str,
    pin_dir: str,
    *,
    defines: Mapping[str, int | str] | None = None,
    reuse: Mapping[str, str] | None = None,
    prog_name: str = "prog",
    pin_maps: bool = True,
    pass_fds: Sequence[int] = (),
    store: ProgramStore | None = None,
) -> str:
    """Compile ``bpf/<filename>`` and load it; its program is pinned at
    ``pin_dir/<prog_name>`` and, with ``pin_maps``, each of its maps at
    ``pin_dir/<map name>``. The maps of ``reuse`` (name -> pin path) are existing ones:
    libbpf renames a reused map after the kernel's name of it (empty for maps ringtool
    creates), so give ``pin_maps=False`` with them. ``pass_fds``: descriptors bpftool
    inherits under the same numbers (for ``/proc/self/fd/N`` paths). Returns the
    program's pin path. ``pin_dir`` must exist on a bpffs. A :class:`BpfCompileError` names
    clang's or the verifier's reason. With ``store`` (the program cache), clang's
    object is kept there, keyed as a BCC compile is plus clang's path, and a later load
    with the same key skips clang (a damaged object is compiled again)."""
    bpftool = _tool("bpftool")
    data = build_object(filename, defines=defines, store=store)
    import tempfile  # here: a warm start compiles nothing

    with tempfile.TemporaryDirectory(prefix="ringtool-bpf-") as tmp:
        obj = os.path.join(tmp, filename.replace(".c", ".o"))
        Path(obj).write_bytes(data)
        prog_pin = os.path.join(pin_dir, prog_name)
        cmd = [bpftool, "prog", "load", obj, prog_pin]
        for name, path in (reuse or {}).items():
            cmd += ["map", "name", name, "pinned", path]
        if pin_maps:
            cmd += ["pinmaps", pin_dir]
        _run(cmd, f"bpftool prog load of {filename}", pass_fds)
    return prog_pin


def build_object(
    filename: str,
    *,
    defines: Mapping[str, int | str] | None = None,
    store: ProgramStore | None = None,
) -> bytes:
    """clang's object of ``bpf/<filename>`` with ``defines``: the one ``store`` keeps
    (keyed as a BCC compile is, plus clang's path), else compiled (and kept there).
    A :class:`BpfCompileError` names clang's reason."""
    clang = _tool("clang-14", "clang")
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    flags = [f"-I{bpf_dir()}", *([f"-I/usr/include/{multiarch}"] if multiarch else [])]
    flags += [f"-D{k}={v}" for k, v in (defines or {}).items()]
    key = None
    if store is not None:
        key = store.key(filename, {**(defines or {}), "RINGTOOL_CLANG": clang}, NO_NEEDS)
        data = _cached_object(store, key)
        if data is not None:
            return data
    import tempfile  # here: a warm start compiles nothing

    with tempfile.TemporaryDirectory(prefix="ringtool-bpf-") as tmp:
        obj = os.path.join(tmp, filename.replace(".c", ".o"))
        build = [clang, "-O2", "-g", "-target", "bpf", *flags, "-c", str(bpf_file(filename))]
        _run([*build, "-o", obj], f"clang on {filename}")
        data = Path(obj).read_bytes()
    if store is not None and key is not None:
        try:
            store.store_object(key, data)
        except (RingtoolError, OSError):
            pass  # kept next time, maybe: this load goes on
    return data


def load_in_process(
    filename: str,
    *,
    defines: Mapping[str, int | str] | None = None,
    maps: Mapping[str, int],
    store: ProgramStore | None = None,
) -> int | None:
    """The program of ``bpf/<filename>`` (its object from :func:`build_object`) loaded
    by libbpf in this process (:mod:`ringtool.kernel.libbpf`), each map named in
    ``maps`` being that fd: the program's fd, the caller's. None where libbpf is not
    installed or refuses it: :func:`load_pinned` (bpftool) then loads it, or says why
    not. A :class:`BpfCompileError` names clang's reason."""
    if not libbpf.available():
        return None
    data = build_object(filename, defines=defines, store=store)
    try:
        return libbpf.load_program(data, maps)
    except libbpf.LibbpfUnusable:
        return None


def _cached_object(store: ProgramStore, key: str) -> bytes | None:
    """The object kept as ``key``; None (compile) when there is none, it is damaged
    (then removed) or the cache can't be used."""
    try:
        return store.load_object(key)
    except DamagedEntry:
        store.remove(key, ".o")
        return None
    except (RingtoolError, OSError):
        return None


__all__ = ["build_object", "load_in_process", "load_pinned"]
