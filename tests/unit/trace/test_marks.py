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
from ringtool.trace.reading.marks import entry_name, is_live, liveness, namespace_key


def test_a_directory_is_live_while_its_process_runs() -> None:
    ns = namespace_key()
    assert is_live(entry_name(os.getpid(), ns, "beef"))
    child = subprocess.Popen(["true"])
    key = process_key(child.pid)
    child.wait()
    assert liveness(f"{key}-{ns}-beef", ns) is False  # exited
    start = key.split("-")[1]
    assert liveness(f"{os.getpid()}-{int(start) + 1}-{ns}-beef", ns) is False  # pid reused


def test_what_cannot_be_told_live_or_dead_here_is_neither() -> None:
    """A directory of another time namespace whose pid runs here: its start time means
    nothing in our /proc, so it is never taken for a dead trace's (and removed)."""
    ns = namespace_key()
    other = entry_name(os.getpid(), f"{ns.partition('_')[0]}_1", "beef")  # another time ns
    assert other != entry_name(os.getpid(), ns, "beef")
    assert liveness(other, ns) is None
    assert liveness(f"999999999-1-{ns}-ab", "?") is None  # our /proc is of another PID ns
    junk = ("", "x", "12", "12-", "-1-a", "a-1-b", f"{os.getpid()}-None-{ns}-x",
            f"{os.getpid()}-1-ab", f"{os.getpid()}-1-{ns}-a-b")  # fmt: skip
    for name in junk:
        assert liveness(name, ns) is None
        assert not is_live(name)


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
