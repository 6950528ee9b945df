"""Load a ``bpf/`` program from the program cache, or compile it with BCC and keep it
there (docs/trace.md, "Program cache").

:func:`load_program` is :func:`ringtool.programs.loader.compile_program` with
``attach=False`` and a :class:`~ringtool.programs.cache_store.ProgramStore`: the key
of the compile (:func:`~ringtool.programs.cache_store.cache_key`) names an entry; one
that is there is loaded (:class:`~ringtool.programs.cached.CachedProgram`), else BCC
compiles and the entry is written for the next run. Never worse than compiling:

* a damaged entry (checksum, format, the kernel refusing what it holds) is deleted,
  noted, and the program compiled (and the entry written again);
* a cache directory that fails its checks is noted once and not used;
* a program the cache can't move (:class:`~ringtool.programs.relocs.NotCacheable`) is
  compiled every time, noted.

Notes go to ``on_note`` (one line each, ``program cache: ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ringtool.errors import RingtoolError
from ringtool.kernel.needs import NO_NEEDS, KernelNeeds
from ringtool.programs.cache_entry import DamagedEntry
from ringtool.programs.cache_store import ProgramStore
from ringtool.programs.cached import CachedProgram, capture
from ringtool.programs.loaded import LoadedProgram
from ringtool.programs.loader import compile_program, import_bcc
from ringtool.programs.relocs import NotCacheable


def _roles(defines: Mapping[str, int | str]) -> dict[str, int]:
    """The ``-D *_FD`` constants: map fds the program names (patched at load)."""
    return {k: int(v) for k, v in defines.items() if k.endswith("_FD")}


def load_program(
    filename: str,
    *,
    defines: Mapping[str, int | str] | None = None,
    needs: KernelNeeds = NO_NEEDS,
    store: ProgramStore | None,
    on_note: Callable[[str], None] = lambda _text: None,
) -> LoadedProgram:
    """``bpf/<filename>`` loaded, nothing attached (attach with
    :func:`ringtool.programs.loader.attach_programs`): from ``store`` when it has the
    entry (the object's ``from_cache`` is True), else compiled by BCC (a
    BpfCompileError when that fails) and stored. ``store`` None: compile, as
    ``compile_program(..., attach=False)``."""
    if store is None:
        compiled: LoadedProgram = compile_program(
            filename, defines=defines, attach=False, needs=needs
        )
        return compiled
    roles = _roles(defines or {})
    key = store.key(filename, defines or {}, needs)
    try:
        entry = store.load(key)
    except DamagedEntry as exc:
        on_note(f"program cache: the entry of {filename} is damaged ({exc}); compiling again")
        store.remove(key)
        entry = None
    except (RingtoolError, OSError) as exc:
        on_note(f"program cache: not used ({exc})")
        return load_program(filename, defines=defines, needs=needs, store=None)
    if entry is not None:
        try:
            return CachedProgram(entry, roles)
        except (RingtoolError, OSError) as exc:
            on_note(
                f"program cache: the kernel refused the entry of {filename} ({exc}); "
                "compiling again"
            )
            store.remove(key)
    obj: LoadedProgram = compile_program(filename, defines=defines, attach=False, needs=needs)
    try:
        store.store(key, capture(obj, import_bcc().lib, filename, roles))
    except NotCacheable as exc:
        on_note(f"program cache: {filename} is compiled every time ({exc})")
    except (RingtoolError, OSError) as exc:
        on_note(f"program cache: could not keep {filename} ({exc})")
    return obj


def is_cached(
    filename: str, defines: Mapping[str, int | str], needs: KernelNeeds, store: ProgramStore
) -> bool:
    """``store`` has an entry for ``bpf/<filename>`` with the caller's ``defines`` and
    ``needs`` (as :func:`load_program` is given them); not checked."""
    return store.has(store.key(filename, defines, needs))


__all__ = ["is_cached", "load_program"]
