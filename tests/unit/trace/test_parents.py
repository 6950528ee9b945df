"""The parents of running processes, read from /proc for exec events' ppid."""

from __future__ import annotations

import os
from pathlib import Path

from ringtool.trace.reading.parents import running_parents, seed_parents


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


class _Table(dict[int, int]):
    """A BCC table's item assignment of ctypes values, kept as ints."""

    def __setitem__(self, key: object, value: object) -> None:
        super().__setitem__(key.value, value.value)  # type: ignore[attr-defined]


def test_seed_writes_pid_to_parent_and_stops_at_the_limit() -> None:
    table = _Table()
    assert seed_parents(table, limit=3) == len(table) == 3
    assert seed_parents(_Table()) >= 1
    everything = _Table()
    seed_parents(everything)
    assert everything[os.getpid()] == os.getppid()
