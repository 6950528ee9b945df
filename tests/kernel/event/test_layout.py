"""C and Python agree on the trace event layout: the compiler checks Python's sizes."""

from __future__ import annotations

import pytest

from ringtool.event.layout import load_layout
from ringtool.programs.loader import BpfCompileError, compile_program
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.trace.reading.cflags import defines_of
from ringtool.trace.reading.sources import SOURCES, Source

pytestmark = pytest.mark.kernel


@pytest.mark.parametrize("source", [s for s in SOURCES if s.ring and s.selectable],
                         ids=lambda s: s.bpf_file)  # fmt: skip
def test_sources_compile_with_the_python_sizes(source: Source) -> None:
    lay = load_layout()
    with RingBufGroup(cpus_per_buffer=1, ring_bytes=4096) as group:
        obj = compile_program(source.bpf_file, defines={**defines_of(group.cflags()),
                              **lay.size_defines()}, needs=source.needs)  # fmt: skip
        obj.cleanup()


def test_a_size_mismatch_fails_the_compile(capfd: pytest.CaptureFixture[str]) -> None:
    lay = load_layout()
    wrong = {**lay.size_defines(), "TRACE_EVENT_SIZE": lay.event.itemsize + 8}
    with RingBufGroup(cpus_per_buffer=1, ring_bytes=4096) as group, pytest.raises(BpfCompileError):
        compile_program("trace_open.c", defines={**defines_of(group.cflags()), **wrong})
    assert "struct trace_event differs from ringtool/event/layout.py" in capfd.readouterr().err
