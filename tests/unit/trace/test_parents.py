"""The parents of running processes, read from /proc for exec events' ppid."""

from __future__ import annotations

import os
from pathlib import Path

from ringtool.trace.reading.parents import parents_to_seed, running_parents


def _stat(root: Path, pid: int, comm: bytes, ppid: bytes) -> None:
    (root / str(pid)).mkdir()
    (root / str(pid) / "stat").write_bytes(b"%d (%s) S %s 1 1 0 -1" % (pid, comm, ppid))


def test_comm_with_spaces_and_parentheses(tmp_path: Path) -> None:
    _stat(tmp_path, 10, b"a) b (c", b"7")
    _stat(tmp_path, 11, b"plain", b"10")
    (tmp_path / "self").mkdir()  # not a pid
    (tmp_path / "12").mkdir()  # exited meanwhile: no stat
    assert sorted(running_parents(str(tmp_path))) == [(10, 7), (11, 10)]


def test_this_process_is_found_with_its_parent() -> None:
    assert (os.getpid(), os.getppid()) in set(running_parents())


def test_the_pairs_to_seed_stop_at_the_limit() -> None:
    assert len(parents_to_seed(limit=3)) == 3
    assert (os.getpid(), os.getppid()) in parents_to_seed()
