"""Loading the RINGBUF trace sources' programs: their ``-D`` constants, the config map
they read their run-time values from, and each source from the program cache or
compiled by BCC (:mod:`ringtool.programs.program_cache`; docs/trace.md, "Program
cache"); and whether that cache is warm for the default sources (``ringtool doctor``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

import ringtool
from ringtool.errors import RingtoolError
from ringtool.event.layout import TraceLayout, load_layout
from ringtool.kernel import bpf
from ringtool.kernel.cpus import online_cpus
from ringtool.programs.cache_store import ProgramStore, cache_disabled
from ringtool.programs.loaded import LoadedProgram
from ringtool.programs.program_cache import is_cached, load_program
from ringtool.readers.ringbuf_group import assign_buffers, group_cflags
from ringtool.trace.reading.cflags import CONFIG_SLOTS, config_values, filter_defines, ring_defines
from ringtool.trace.reading.options import RING_SOURCES, TraceOptions
from ringtool.trace.reading.sources import SOURCE_NAMED


def source_defines(
    opts: TraceOptions,
    layout: TraceLayout,
    group_flags: list[str] | None,
    config_fd: int,
    extra: Mapping[str, int | str],
) -> dict[str, int | str]:
    """The ``-D`` constants of the trace sources for ``opts``: which filters are on,
    the event sizes, the config map (``config_fd``) and, for a RINGBUF group (its
    ``group_flags``), its constants (:func:`~ringtool.trace.reading.cflags.ring_defines`)
    and ``extra`` (a flight recorder's)."""
    defines: dict[str, int | str] = {**filter_defines(opts), **layout.size_defines(),
                                     "TRACE_CONFIG_FD": config_fd}  # fmt: skip
    if group_flags is not None:
        defines.update(ring_defines(opts, group_flags))
        defines.update(extra)
    return defines


def cache_state(opts: TraceOptions) -> tuple[str, str]:
    """Whether a trace of ``opts`` (the CLI's defaults: ``ringtool doctor``) would load
    its RINGBUF sources from the program cache on this kernel and these CPUs:
    ``("warm" | "cold" | "unusable", what to tell)``. Creates nothing; never raises."""
    if cache_disabled():
        return "unusable", "turned off (RINGTOOL_NO_CACHE is set)"
    store = ProgramStore(create=False, version=ringtool.__version__)
    try:
        flags = group_cflags(assign_buffers(online_cpus(), 1), 0, 0, 0)
        defines = source_defines(opts, load_layout(), flags, 0, {})
        cold = [name for name in opts.events if name in RING_SOURCES
                and not is_cached(SOURCE_NAMED[name].bpf_file, defines,
                                  SOURCE_NAMED[name].needs, store)]  # fmt: skip
    except (RingtoolError, OSError) as exc:
        return "unusable", str(exc)
    finally:
        store.close()
    if cold:
        return "cold", (f"no entry for {', '.join(cold)} in {store.path}: the next "
                        "`ringtool trace` compiles them (seconds) and keeps them")  # fmt: skip
    return "warm", f"warm for the default sources on this kernel ({store.path})"


def make_config(opts: TraceOptions) -> int:
    """A new config map (bpf/trace_event.h ``TRACE_CONFIG_FD``: a one-element ARRAY)
    holding :func:`~ringtool.trace.reading.cflags.config_values` for ``opts`` and this
    process; its fd (the caller closes it)."""
    fd = bpf.map_create(
        bpf.MapType.ARRAY, key_size=4, value_size=len(CONFIG_SLOTS) * 8, max_entries=1
    )
    try:
        bpf.map_update(fd, bytes(4), config_values(opts, os.getpid()))
    except BaseException:
        bpf.close_fd(fd)
        raise
    return fd


def program_store(opts: TraceOptions) -> ProgramStore | None:
    """The program cache the trace uses: None with ``--no-cache`` or
    ``$RINGTOOL_NO_CACHE``."""
    if not opts.program_cache or cache_disabled():
        return None
    return ProgramStore(version=ringtool.__version__)


def load_sources(
    names: Sequence[str],
    defines: Mapping[str, int | str],
    opts: TraceOptions,
    on_note: Callable[[str], None],
    on_step: Callable[[str], None],
    more: Mapping[str, Mapping[str, int | str]] | None = None,
) -> tuple[dict[str, LoadedProgram], dict[str, str]]:
    """Each source of ``names`` loaded with ``defines`` (nothing attached), and those
    of ``more`` (source name -> constants) with theirs too, from the program cache
    unless ``opts`` or the environment turn it off (:func:`program_store`): ``(name ->
    its program object, name -> "cache" or "compiled")``. A source that fails is left
    out with a note ``source NAME disabled: ...``; the cache's own notes go to
    ``on_note`` too."""
    sources: dict[str, LoadedProgram] = {}
    origins: dict[str, str] = {}
    store = program_store(opts)
    if store is not None:
        try:
            store.open()
        except (RingtoolError, OSError) as exc:  # told once, not once a source
            on_note(f"program cache: not used ({exc})")
            store = None
    try:
        for name in names:
            source = SOURCE_NAMED[name]
            mine = {**defines, **(more or {}).get(name, {})}
            hit = store is not None and is_cached(source.bpf_file, mine, source.needs, store)
            on_step(f"loading bpf/{source.bpf_file} (source {name}) from the program cache"
                    if hit else f"compiling bpf/{source.bpf_file} (source {name})")  # fmt: skip
            try:
                obj = load_program(source.bpf_file, defines=mine, needs=source.needs,
                                   store=store, on_note=on_note)  # fmt: skip
            except RingtoolError as exc:
                text = str(exc).strip().splitlines()
                on_note(f"source {name} disabled: {text[0] if text else type(exc).__name__}")
                continue
            sources[name] = obj
            origins[name] = "cache" if getattr(obj, "from_cache", False) else "compiled"
    finally:
        if store is not None:
            store.close()
    return sources, origins


__all__ = ["cache_state", "load_sources", "make_config", "program_store", "source_defines"]
