"""Which kernels get TRACE_HAVE_TASK_STORAGE."""

from __future__ import annotations

from pathlib import Path

from ringtool.programs.kernel_features import (
    comm_offset,
    feature_defines,
    has_task_storage,
    kernel_version,
)


def test_kernel_version() -> None:
    assert kernel_version("6.1.0-18-amd64") == (6, 1)
    assert kernel_version("5.13.0") == (5, 13)
    assert kernel_version("weird") == (0, 0)


def test_task_storage_needs_5_13_and_btf(tmp_path: Path) -> None:
    btf = tmp_path / "vmlinux"
    btf.write_bytes(b"x")
    assert has_task_storage("6.1.0-18-amd64", btf)
    assert has_task_storage("5.13.0", btf)
    assert not has_task_storage("5.12.19", btf)
    assert not has_task_storage("6.1.0", tmp_path / "none")


def test_defines_only_for_its_sources() -> None:
    assert set(feature_defines("trace_exec.c")) <= {"TRACE_TASK_COMM_OFF"}
    assert set(feature_defines("trace_open.c")) - {"TRACE_TASK_COMM_OFF"} == {
        "TRACE_HAVE_TASK_STORAGE"
    }
    assert feature_defines("trace_net.c") == {}  # TC programs: no task BTF helper


def test_comm_offset_needs_the_task_helper(tmp_path: Path) -> None:
    assert comm_offset(tmp_path / "none") is None
