"""The trace sources' per-thread state, in task storage and in the hash fallback: both
builds give the same events (every open of a worker, path and result) and count every
one of its syscalls in the latency histograms."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ringtool.programs.loader as loader
from ringtool.programs.kernel_features import SOURCES, has_task_storage
from ringtool.trace.options import TraceOptions
from tests.helpers.trace import Worker, counts, hot_file, traced, unique_comm

pytestmark = pytest.mark.kernel

N = 500
OPENAT_NR = 257  # x86-64's openat (arch/x86/entry/syscalls/syscall_64.tbl)


@pytest.mark.parametrize("storage", [1, 0], ids=["task-storage", "hash"])
def test_same_events_either_way(storage: int, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    if storage and not has_task_storage():
        pytest.skip("this kernel has no task storage for tracing programs")
    if os.uname().machine != "x86_64":
        pytest.skip("the openat number below is x86-64's")
    monkeypatch.setattr(loader, "feature_defines", lambda source=None: {
        "TRACE_HAVE_TASK_STORAGE": storage} if source in SOURCES else {})  # fmt: skip
    target = hot_file(tmp_path)
    name = unique_comm()
    opts = TraceOptions(events=("open", "syscalls"), comm=name, buffer_pages=256)
    with traced(opts) as s:
        worker = Worker(name, "open", target, N)
        worker.go()
        worker.wait()
        records, dropped, lost = counts(s)
        hist = s.syscall_hist()
    assert dropped == 0 and lost == 0
    opens = records[records["h"]["type"] == 4]  # TRACE_OPEN
    assert len(opens) == N
    assert {bytes(p).rstrip(b"\0") for p in opens["data"]} == {str(target).encode()}
    assert (opens["ret"] >= 0).all() and (opens["h"]["pid"] == worker.pid).all()
    assert sum(hist.get(OPENAT_NR, {}).values()) >= N
