"""The pin root of ``ringtool mark`` (/sys/fs/bpf/ringtool) on a bpffs any user may
write: ringtool uses, locks and deletes only in a directory root made and only root
can change (ringtool/kernel/pin_root.py)."""

from __future__ import annotations

import os
import pwd
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringtool.errors import UnsafeDirectoryError
from ringtool.trace.reading.mark_send import LOCK_WAIT_S, MarkNotDeliveredError, send_mark
from ringtool.trace.reading.marks import entry_name, namespace_key, remove_stale
from tests.helpers.bpffs import in_fresh_bpffs, scratch_pin_root
from tests.helpers.procs import stop

pytestmark = pytest.mark.kernel

NOBODY = pwd.getpwnam("nobody").pw_uid
REFUSED = "refusing /sys/fs/bpf/ringtool: it is a symbolic link"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A directory a user would have root empty: two subdirectories with a file."""
    v = tmp_path / "victim"
    for sub in ("etc", "home"):
        (v / sub).mkdir(parents=True)
        (v / sub / "keep").write_text("mine")
    v.chmod(0o755)
    tmp_path.chmod(0o755)
    return v


@pytest.mark.parametrize(
    "command",
    [["mark", "x"], ["trace", "--json", "--events", "exec", "-d", "1"]],
    ids=["mark", "trace"],
)
def test_a_link_planted_by_a_user_is_refused_and_nothing_behind_it_goes(
    victim: Path, command: list[str]
) -> None:
    """As the issue's reproduction: on a fresh bpffs (mode 1777) nobody links
    /sys/fs/bpf/ringtool to a directory before root's first mark or trace."""
    setup = f"runuser -u nobody -- ln -s {victim} /sys/fs/bpf/ringtool"
    done = in_fresh_bpffs(setup, command)
    assert sorted(p.name for p in victim.iterdir()) == ["etc", "home"], done.stderr
    assert (victim / "etc" / "keep").read_text() == "mine"
    assert REFUSED in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    if command[0] == "mark":
        assert done.returncode == 1
        assert done.stderr.startswith(f"ringtool mark: {REFUSED}, so another user")
        assert len(done.stderr.splitlines()) == 1
    else:  # the trace runs, without markers, and says why
        assert done.returncode == 0, done.stderr


@pytest.fixture
def bpffs_root() -> Iterator[Path]:
    with scratch_pin_root() as root:
        yield root


@pytest.mark.parametrize("change", ["owned by nobody", "mode 0777"])
def test_a_root_another_user_owns_or_may_write_is_refused(bpffs_root: Path, change: str) -> None:
    stale = bpffs_root / f"999999999-1-{namespace_key()}-ab"  # a gone trace's: removed if used
    stale.mkdir()
    if change == "owned by nobody":
        os.chown(bpffs_root, NOBODY, -1)
        why = f"it is owned by uid {NOBODY}"
    else:
        bpffs_root.chmod(0o777)
        why = "it is writable by group or others (mode 0777)"
    with pytest.raises(
        UnsafeDirectoryError, match="^" + re.escape(f"refusing {bpffs_root}: {why},")
    ):
        remove_stale(str(bpffs_root))
    with pytest.raises(
        UnsafeDirectoryError, match="^" + re.escape(f"refusing {bpffs_root}: {why},")
    ):
        send_mark("x", root=str(bpffs_root))
    assert stale.is_dir()


_HOLD = """import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


def test_a_held_lock_on_a_trace_directory_is_an_error_not_a_hang(bpffs_root: Path) -> None:
    """A live-looking entry whose flock another process holds and never drops."""
    entry = None
    holder = subprocess.Popen(["sleep", "600"], text=True)
    try:
        entry = bpffs_root / entry_name(holder.pid, namespace_key(), "fake")
        entry.mkdir()
        locker = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(entry)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert locker.stdout is not None and locker.stdout.readline() == "held\n"
            outcome: list[BaseException | int] = []

            def mark() -> None:
                try:
                    outcome.append(send_mark("x", root=str(bpffs_root)))
                except BaseException as exc:  # reported below
                    outcome.append(exc)

            t = threading.Thread(target=mark, daemon=True)
            t.start()
            t.join(LOCK_WAIT_S + 60)  # a hang guard, not a timing check
            assert outcome, "ringtool mark hung on a lock another process holds"
        finally:
            stop(locker)
    finally:
        stop(holder)
    (err,) = outcome
    assert isinstance(err, MarkNotDeliveredError)
    assert str(err).startswith(f"trace {entry}: its marker ring stayed locked for")
