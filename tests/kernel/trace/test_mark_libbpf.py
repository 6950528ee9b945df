"""The marker drain (bpf/trace_mark.bpf.c) is loaded by libbpf in ringtool's process,
not by a bpftool started for it on every trace's start; where libbpf refuses, the
caller hears None and loads with bpftool."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from ringtool.event.layout import load_layout
from ringtool.kernel import bpf
from ringtool.programs.clang_loader import load_in_process
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.trace.reading.marks import MARK_RING_BYTES, check_user_ringbuf
from tests.helpers.bpffs import scratch_pin_root

pytestmark = pytest.mark.kernel

_START = """
import os, sys
started = []
sys.addaudithook(lambda event, args: event == "subprocess.Popen" and started.append(args[1]))
from ringtool.event.layout import load_layout
from ringtool.kernel import bpf
from ringtool.programs.cache_store import ProgramStore
from ringtool.readers.ringbuf_group import RingBufGroup
from ringtool.trace.reading.marks import MarkSource
root, cache = sys.argv[1:]
store = ProgramStore(cache)
group = RingBufGroup(cpus_per_buffer=1, ring_bytes=1 << 16)
MarkSource(group, load_layout(), root=root, store=store).close()  # clang's object kept
del started[:]
marks = MarkSource(group, load_layout(), root=root, store=store)
(entry,) = os.listdir(root)
fd = bpf.obj_get(os.path.join(root, entry, "drain"))
print(sorted(os.listdir(os.path.join(root, entry))), bpf.prog_test_run_raw_tp(fd), started)
"""


def test_a_start_loads_the_drain_without_starting_a_process(tmp_path: Path) -> None:
    check_user_ringbuf()
    with scratch_pin_root() as root:
        done = subprocess.run([sys.executable, "-c", _START, str(root), str(tmp_path / "c")],
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    # the pins ringtool mark needs, the drain runs (no marker: 0 drained), no process
    assert done.stdout.split("]", 1)[0] == "['drain', 'marks'"
    assert done.stdout.split()[-2:] == ["0", "[]"], done.stdout


def test_a_map_that_does_not_match_is_refused_not_an_error() -> None:
    check_user_ringbuf()
    layout = load_layout()
    group = RingBufGroup(cpus_per_buffer=1, ring_bytes=1 << 16)
    wrong = bpf.map_create(bpf.MapType.ARRAY, key_size=4, value_size=4, max_entries=1)
    gate = bpf.map_create(bpf.MapType.ARRAY, key_size=4, value_size=4, max_entries=1)
    try:
        defines: dict[str, int | str] = {
            **layout.size_defines(), "MARK_RING_BYTES": MARK_RING_BYTES, "MARK_ENDED": 1,
            "RT_PCPU_OUTER_ENTRIES": bpf.map_info(group.rings_fd).max_entries,
            "RT_PCPU_NCPU": bpf.map_info(group.cpumap_fd).max_entries,
            "RT_PCPU_NR_BUFS": group.layout.buffers,
            "RT_PCPU_CPUS_PER_BUF": group.layout.cpus_per_buffer,
        }  # fmt: skip
        maps = {"rt_rings": group.rings_fd, "rt_cpumap": group.cpumap_fd,
                "rt_drops": group.drops_fd, "mark_gate": gate}  # fmt: skip
        # the marker ring given as an array: libbpf refuses it, the caller uses bpftool
        assert load_in_process("trace_mark.bpf.c", defines=defines,
                               maps={**maps, "marks": wrong}) is None  # fmt: skip
        assert load_in_process("trace_mark.bpf.c", defines=defines,
                               maps={**maps, "no_such_map": wrong}) is None  # fmt: skip
    finally:
        bpf.close_fd(wrong)
        bpf.close_fd(gate)
        group.close()
