"""Which kernels get TRACE_HAVE_TASK_STORAGE."""

from __future__ import annotations

from pathlib import Path

import pytest

from ringtool.kernel.btf import VMLINUX_BTF
from ringtool.kernel.needs import BtfMember
from ringtool.programs.kernel_features import (
    comm_offset,
    feature_defines,
    has_task_storage,
    kernel_version,
    member_defines,
    task_field_defines,
)
from ringtool.trace.reading.sources import SOURCE_NAMED


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
    every = set(task_field_defines())  # the running kernel's: {} without BTF
    fields = every - {"TRACE_TASK_START_TIME_OFF"}  # the syscalls source's alone
    assert set(feature_defines(SOURCE_NAMED["exec"].needs)) == fields
    assert set(feature_defines(SOURCE_NAMED["open"].needs)) == fields | {"TRACE_HAVE_TASK_STORAGE"}
    syscalls = every | {"TRACE_HAVE_TASK_STORAGE"}
    assert set(feature_defines(SOURCE_NAMED["syscalls"].needs)) == syscalls
    assert feature_defines(SOURCE_NAMED["net"].needs) == {}  # TC programs: no task BTF helper


def test_only_the_members_asked_for(tmp_path: Path) -> None:
    """A need naming some task members gets their offsets and no others (the running
    kernel's BTF: skipped where it has none)."""
    every = task_field_defines()
    if not every:
        pytest.skip("no task BTF fields on this kernel")
    some = task_field_defines(members=("task_struct.comm", "task_struct.pid", "task_struct.tgid"))
    assert set(some) == {"TRACE_HAVE_TASK_BTF", "TRACE_TASK_COMM_OFF", "TRACE_TASK_PID_OFF",
                         "TRACE_TASK_TGID_OFF"}  # fmt: skip
    assert task_field_defines(members=()) == {}


@pytest.mark.skipif(not VMLINUX_BTF.exists(), reason="no BTF here")
def test_task_fields_from_6_1_on() -> None:
    assert task_field_defines(release="5.15.0-91-generic") == {}
    assert task_field_defines(release="6.1.0-18-amd64")["TRACE_HAVE_TASK_BTF"] == 1


def test_no_task_fields_without_btf(tmp_path: Path) -> None:
    assert comm_offset(tmp_path / "none") is None
    assert task_field_defines(tmp_path / "none") == {}


@pytest.mark.skipif(not VMLINUX_BTF.exists(), reason="no BTF here")
def test_members_read_by_address_get_their_btf_offsets() -> None:
    """The tcp source's socket members, in the running kernel; one the BTF does not
    show (or not of that size) is left out, not guessed."""
    got = feature_defines(SOURCE_NAMED["tcp"].needs)
    assert {"TRACE_TCP_BYTES_ACKED_OFF", "TRACE_TCP_BYTES_RECEIVED_OFF",
            "TRACE_SOCK_ERR_OFF"} <= set(got)  # fmt: skip
    assert got["TRACE_TCP_BYTES_ACKED_OFF"] != got["TRACE_TCP_BYTES_RECEIVED_OFF"]
    wrong = (BtfMember("tcp_sock.no_such", 8, "X_OFF"), BtfMember("sock.sk_err", 8, "Y_OFF"))
    assert member_defines(wrong) == {}


def test_no_members_without_btf(tmp_path: Path) -> None:
    members = SOURCE_NAMED["tcp"].needs.members
    assert members and member_defines(members, tmp_path / "none") == {}
