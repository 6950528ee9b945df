"""The trace sources' per-thread state, in task storage and in the hash fallback, and
the task's comm read from task_struct or with the helper: every build gives the same
events (every open of a worker, path, result and comm) and counts every one of its
syscalls in the latency histograms."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import ringtool.programs.loader as loader
from ringtool.kernel.needs import KernelNeeds
from ringtool.programs.kernel_features import has_task_storage, task_field_defines
from ringtool.trace.reading.options import TraceOptions
from tests.helpers.cgroups import cgroup2_mount
from tests.helpers.trace import Worker, counts, hot_file, traced, unique_comm

pytestmark = pytest.mark.kernel

N = 500
OPENAT_NR = 257  # x86-64's openat (arch/x86/entry/syscalls/syscall_64.tbl)


@pytest.mark.parametrize(
    ("storage", "direct"), [(1, True), (1, False), (0, False)],
    ids=["task-storage,btf-fields", "task-storage,helpers", "hash,helpers"],
)  # fmt: skip
def test_same_events_either_way(storage: int, direct: bool, tmp_path: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    if storage and not has_task_storage():
        pytest.skip("this kernel has no task storage for tracing programs")
    if os.uname().machine != "x86_64":
        pytest.skip("the openat number below is x86-64's")
    fields = task_field_defines() if direct else {}  # comm, uid/gid, cgroup offsets

    def defines(needs: KernelNeeds) -> dict[str, int | str]:
        out: dict[str, int | str] = dict(fields) if needs.task_members else {}
        if needs.task_storage:
            out["TRACE_HAVE_TASK_STORAGE"] = storage
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
    assert set(opens["uid"].tolist()) == {os.getuid()} and set(opens["gid"].tolist()) == {
        os.getgid()
    }
    own = Path("/proc/self/cgroup").read_text().split("::", 1)[1].strip()  # the worker's too
    assert set(opens["h"]["cgroup"].tolist()) == {(cgroup2_mount() / own.lstrip("/")).stat().st_ino}
    assert sum(hist.get(OPENAT_NR, {}).values()) >= N
