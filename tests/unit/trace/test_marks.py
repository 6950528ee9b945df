"""``ringtool mark``'s pure parts: telling a live trace's directory from a stale one,
and the one line on a kernel without BPF_MAP_TYPE_USER_RINGBUF."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from ringtool.cli.main import main
from ringtool.errors import BpfSyscallError
from ringtool.kernel import bpf
from ringtool.kernel.proc_start import process_key
from ringtool.trace.marks import is_live


def test_a_directory_is_live_while_its_process_runs() -> None:
    assert is_live(f"{process_key(os.getpid())}-beef")
    child = subprocess.Popen(["true"])
    key = process_key(child.pid)
    child.wait()
    assert not is_live(f"{key}-beef")  # exited
    start = key.split("-")[1]
    assert not is_live(f"{os.getpid()}-{int(start) + 1}-beef")  # our pid, another start
    for junk in ("", "x", "12", "12-", "-1-a", "a-1-b", f"{os.getpid()}-None-x"):
        assert not is_live(junk)


def test_a_kernel_without_user_ringbuf_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """What 5.x says to BPF_MAP_CREATE with type 31: EINVAL (an unknown map type)."""

    def refuse(*args: object, **kw: object) -> int:
        raise BpfSyscallError("MAP_CREATE", errno.EINVAL)

    monkeypatch.setattr(bpf, "map_create", refuse)
    assert main(["mark", "hello"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0].startswith("ringtool mark: this kernel (")
    assert "has no BPF_MAP_TYPE_USER_RINGBUF (Linux 6.1 or later)" in err[0]
