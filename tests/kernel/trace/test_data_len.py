"""The BPF programs store ``data``'s length in ``data_len`` (bpf/trace_event.h): the
bytes before its first NUL for open's path and fork's child comm, 0 for an exit,
``TRACE_DATA_LEN_UNKNOWN`` for an exec (several strings: the recorder counts them).
A recording takes it where it holds (``ringtool/event/data_lengths.py``), so it must
be the string's length in real records: opens of paths short, long (cut at the
field) and failing, and the forks, exits and execs of a shell, read from the rings.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ringtool.event.layout import load_layout
from ringtool.trace.reading.session import TraceOptions
from tests.helpers.trace import counts, traced

pytestmark = pytest.mark.kernel

LAYOUT = load_layout()
UNKNOWN = LAYOUT.constants["TRACE_DATA_LEN_UNKNOWN"]


@pytest.fixture
def link() -> Iterator[Path]:
    """A directory for symlinks under unique names (the comm they run with)."""
    d = Path("/tmp") / f"rtc-dlen-{secrets.token_hex(4)}"
    d.mkdir(mode=0o755)
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


def _named(d: Path, target: str) -> Path:
    p = d / ("rtd" + secrets.token_hex(6))
    p.symlink_to(target)
    return p


def _first_nul(rec: np.void) -> int:
    raw = bytes(rec["data"].tobytes()).ljust(LAYOUT.event["data"].itemsize, b"\0")
    return raw.index(b"\0")


def _of(records: np.ndarray, name: str) -> np.ndarray:  # type: ignore[type-arg]
    return records[records["h"]["type"] == LAYOUT.type_id(name)]


def test_open_stores_its_path_length(link: Path) -> None:
    cat = _named(link, "/bin/cat")
    paths = ["/etc/hostname", "/nonexistent/" + "p" * 300, "/tmp", "x"]
    with traced(TraceOptions(events=("open",), comm=cat.name)) as s:
        for p in paths:
            subprocess.run([str(cat), p], capture_output=True, check=False)
        records, dropped, lost = counts(s)
    opens = _of(records, "open")
    assert dropped == lost == 0 and len(opens) >= len(paths)
    got = {bytes(r["data"]).split(b"\0")[0] for r in opens}  # stale bytes after it
    assert b"/etc/hostname" in got and b"x" in got
    long = [r for r in opens if bytes(r["data"]).startswith(b"/nonexistent/")]
    assert long and _first_nul(long[0]) == LAYOUT.event["data"].itemsize - 1
    for r in opens:
        assert int(r["data_len"]) == _first_nul(r)


def test_fork_exit_and_exec_store_theirs(link: Path) -> None:
    sh = _named(link, "/bin/sh")
    with traced(TraceOptions(events=("exec",), comm=sh.name)) as s:
        subprocess.run([str(sh), "-c", "/bin/true; /bin/true a b; exit 0"], check=True)
        records, dropped, lost = counts(s)
    forks, exits, execs = _of(records, "fork"), _of(records, "exit"), _of(records, "exec")
    assert dropped == lost == 0 and len(forks) >= 2 and len(exits) >= 1 and len(execs) >= 1
    for r in forks:
        assert int(r["data_len"]) == _first_nul(r) > 0
    assert {int(r["data_len"]) for r in exits} == {0}
    assert {int(r["data_len"]) for r in execs} == {UNKNOWN}
