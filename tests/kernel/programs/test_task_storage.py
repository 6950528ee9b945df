"""The trace sources' per-thread state, in task storage and in the hash fallback, and
the task's comm read from task_struct or with the helper: every build gives the same
events (every open of a worker, path, result and comm) and counts every one of its
syscalls in the latency histograms."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ringtool.programs.loader as loader
from ringtool.programs.kernel_features import COMM_SOURCES, SOURCES, comm_offset, has_task_storage
from ringtool.trace.options import TraceOptions
from tests.helpers.trace import Worker, counts, hot_file, traced, unique_comm

pytestmark = pytest.mark.kernel

N = 500
OPENAT_NR = 257  # x86-64's openat (arch/x86/entry/syscalls/syscall_64.tbl)


@pytest.mark.parametrize(
    ("storage", "direct_comm"), [(1, True), (1, False), (0, False)],
    ids=["task-storage,btf-comm", "task-storage,comm-helper", "hash,comm-helper"],
)  # fmt: skip
def test_same_events_either_way(storage: int, direct_comm: bool, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    if storage and not has_task_storage():
        pytest.skip("this kernel has no task storage for tracing programs")
    if os.uname().machine != "x86_64":
        pytest.skip("the openat number below is x86-64's")
    offset = comm_offset() if direct_comm else None
    if direct_comm and offset is None:
        pytest.skip("this kernel's BTF has no task_struct.comm")

    def defines(source: str | None = None) -> dict[str, int | str]:
        out: dict[str, int | str] = {}
        if source in SOURCES:
            out["TRACE_HAVE_TASK_STORAGE"] = storage
        if source in COMM_SOURCES and offset is not None:
            out["TRACE_TASK_COMM_OFF"] = offset
        return out

    monkeypatch.setattr(loader, "feature_defines", defines)
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
    assert {bytes(c) for c in opens["h"]["comm"]} == {name.encode()}
    assert sum(hist.get(OPENAT_NR, {}).values()) >= N
