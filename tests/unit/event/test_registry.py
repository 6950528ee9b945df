"""The event registry is the one table of event types: it agrees with the header's type
constants, every per-type list of ringtool is derived from it, and the sources' table
agrees with it and with the BPF files (pure: no BPF)."""

from __future__ import annotations

import re

import pytest

from ringtool.bpf_files import bpf_dir
from ringtool.cli import trace as cli_trace
from ringtool.event import detail, fields, layout, registry
from ringtool.event.registry import BY_NAME, EVENT_TYPES, RECENT, RECENT_TITLE, types_in
from ringtool.export import metrics
from ringtool.kernel.needs import KernelNeeds
from ringtool.trace.dashboard import tui_panels
from ringtool.trace.reading.options import TraceOptions
from ringtool.trace.reading.sources import (
    ALL_EVENTS,
    DEFAULT_EVENTS,
    RING_SOURCES,
    SOURCE_NAMED,
    SOURCES,
    Source,
)
from ringtool.trace.report import stats
from tests.helpers.paths import ROOT

HEADER = (bpf_dir() / "trace_event.h").read_text()


def header_types() -> dict[str, int]:
    """The header's block of type constants: the ``#define`` lines after the comment
    that announces them, up to the blank line."""
    start = HEADER.index("/* The event types (struct trace_hdr's `type`)")
    block = HEADER[HEADER.index("*/", start) + 2 :].strip("\n").split("\n\n")[0]
    out = {}
    for line in block.splitlines():
        m = re.match(r"#define (TRACE_\w+) (\d+)\b", line)
        assert m, f"not a type constant in the types' block: {line!r}"
        out[m[1]] = int(m[2])
    return out


def test_every_header_type_has_one_entry_and_back() -> None:
    constants = header_types()
    assert sorted(constants) == sorted(t.constant for t in EVENT_TYPES)
    assert len(set(constants.values())) == len(constants)
    assert len(BY_NAME) == len(EVENT_TYPES)  # names unique
    # the registry's order is the constants' order
    assert [constants[t.constant] for t in EVENT_TYPES] == sorted(constants.values())


def test_the_layout_names_every_type_from_the_registry() -> None:
    assert tuple(t.constant for t in EVENT_TYPES) == layout.TYPE_CONSTANTS
    lay = layout.load_layout()
    assert lay.type_names == {
        v: k.removeprefix("TRACE_").lower() for k, v in header_types().items()
    }
    for t in EVENT_TYPES:
        assert lay.type_id(t.name) == header_types()[t.constant]


def test_the_fields_are_the_registry_entries() -> None:
    assert {t.name: t.fields for t in EVENT_TYPES if t.fields} == fields.BY_TYPE
    assert fields.Field is registry.Field
    for t in EVENT_TYPES:
        keys = [f.key for f in t.fields]
        assert len(keys) == len(set(keys)), t.name
        # every record column named is a member of the type's struct (struct
        # trace_event, struct trace_net, or the type's own)
        columns = layout.load_layout().dtypes[t.record].names
        for f in t.fields:
            assert f.column.split(".")[0] in columns, (t.name, f)


def test_each_detail_is_the_registry_entry_with_its_code() -> None:
    assert set(detail.DETAIL) == set(BY_NAME)
    common = {f.key for f in fields.COMMON}
    for t in EVENT_TYPES:
        path, _rest, reads = detail.DETAIL[t.name]
        assert (path, reads) == (t.detail.path, t.detail.reads)
        own = {f.key for f in t.fields}
        assert set(reads) | ({path} if path else set()) <= own | common, t.name


def test_sources_of_the_stats_and_metrics_are_the_registry() -> None:
    assert stats.SOURCE_OF is registry.SOURCE_OF and metrics.SOURCE_OF is registry.SOURCE_OF
    assert {t.name: t.source for t in EVENT_TYPES} == registry.SOURCE_OF


def test_the_dashboard_tail_is_the_registry_panels() -> None:
    assert (
        tui_panels.TAIL_TYPES == types_in(RECENT) == ("exec", "open", "net", "mark", "tcp", "disk")
    )
    assert tui_panels.TAIL_TITLE == "recent exec/open/net"
    assert set(types_in(RECENT_TITLE)) <= set(types_in(RECENT))
    for t in EVENT_TYPES:
        assert t.panels <= set(registry.PANELS), t.name


def test_every_type_has_its_source_and_every_source_types() -> None:
    assert {t.source for t in EVENT_TYPES} == set(SOURCE_NAMED)
    for s in SOURCES:
        assert s.types, s.name
        assert s.types == tuple(t for t in EVENT_TYPES if t.source == s.name)


def test_the_events_lists_are_the_sources_table() -> None:
    assert ALL_EVENTS == ("exec", "open", "syscalls", "net", "tcp", "disk", "cpuwait")
    assert {s.name: s.bpf_file for s in SOURCES if s.ring and s.selectable} == RING_SOURCES
    assert DEFAULT_EVENTS == ("exec", "open", "syscalls") == TraceOptions().events
    assert cli_trace.EVENTS == ALL_EVENTS and cli_trace.DEFAULT_EVENTS == DEFAULT_EVENTS


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.name)
def test_each_source_file_emits_its_types_and_reads_its_needs(source: Source) -> None:
    """The BPF file exists, writes each of its types' constants, and reads the -D
    constant of each of its needs (so a need listed is one the program has)."""
    text = (bpf_dir() / source.bpf_file).read_text()
    for t in source.types:
        assert re.search(rf"\b{t.constant}\b", text), (source.bpf_file, t.constant)
    needs = source.needs
    for define in ([f.define for f in needs.string_fields] + [o.define for o in needs.optional]
                   + [m.define for m in needs.members]):  # fmt: skip
        assert define in text, (source.bpf_file, define)
    assert needs.task_storage == ("TRACE_HAVE_TASK_STORAGE" in text), source.bpf_file


def test_needs_union_keeps_each_once_in_order() -> None:
    a = KernelNeeds(task_members=("x", "y"), task_storage=True)
    b = KernelNeeds(task_members=("y", "z"))
    assert KernelNeeds.union([a, b]) == KernelNeeds(task_members=("x", "y", "z"), task_storage=True)
    assert KernelNeeds.union([]) == KernelNeeds()
    assert KernelNeeds.union(t.needs for t in EVENT_TYPES) == registry.NEEDS


def test_programs_name_no_trace_source() -> None:
    """The loader's layer gets each source's needs as data: no module of
    ringtool/programs/ names a trace source's file."""
    for path in sorted((ROOT / "ringtool" / "programs").glob("*.py")):
        text = path.read_text()
        for s in SOURCES:
            assert s.bpf_file not in text, (path.name, s.bpf_file)
