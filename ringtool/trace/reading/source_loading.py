"""Loading the RINGBUF trace sources' programs: the config map they read their
run-time values from, and each source from the program cache or compiled by BCC
(:mod:`ringtool.programs.program_cache`; docs/trace.md, "Program cache")."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ringtool
from ringtool.errors import RingtoolError
from ringtool.kernel import bpf
from ringtool.programs.cache_store import ProgramStore, cache_disabled
from ringtool.programs.program_cache import load_program
from ringtool.trace.reading.cflags import CONFIG_SLOTS, config_values
from ringtool.trace.reading.options import TraceOptions
from ringtool.trace.reading.sources import SOURCE_NAMED


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
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each source of ``names`` loaded with ``defines`` (nothing attached), from the
    program cache unless ``opts`` or the environment turn it off
    (:func:`program_store`): ``(name -> its program object, name -> "cache" or
    "compiled")``. A source that fails is left out with a note ``source NAME disabled:
    ...``; the cache's own notes go to ``on_note`` too."""
    sources: dict[str, Any] = {}
    origins: dict[str, str] = {}
    store = program_store(opts)
    try:
        for name in names:
            source = SOURCE_NAMED[name]
            on_step(f"loading bpf/{source.bpf_file} (source {name})")
            try:
                obj = load_program(source.bpf_file, defines=defines, needs=source.needs,
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


__all__ = ["load_sources", "make_config", "program_store"]
