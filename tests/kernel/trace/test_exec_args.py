"""exec events carry the arguments and the uid (like bcc's execsnoop), bounded and
marked when cut.

Real execs of a symlink to /bin/true with a unique name (the comm after exec), with
known argv: short, hostile bytes (escape sequences, invalid UTF-8, empty strings),
a long one that must be cut, and more than TRACE_MAXARG arguments; one as uid/gid
65534. Read from the rings directly (record level) and through ``ringtool trace
--json`` (the fields every output shows).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ringtool.event import exec_data
from ringtool.event.layout import load_layout
from ringtool.trace.reading.session import TraceOptions
from tests.helpers.trace import Trace, counts, traced

pytestmark = pytest.mark.kernel

LAYOUT = load_layout()
DATA_LEN = LAYOUT.constants["TRACE_DATA_LEN"]
HOSTILE = [b"\x1b[2J\x1b]0;owned\x07", b"\xff\xfe", b"", b"tab\there", b"caf\xc3\xa9"]


def as_nobody() -> None:
    os.setgid(65534)
    os.setuid(65534)


@pytest.fixture
def prog(tmp_path: Path) -> Path:
    """/bin/true under a unique 15-byte name (the comm it runs with), in a directory
    uid 65534 can reach."""
    d = Path("/tmp") / f"rtc-exec-{secrets.token_hex(4)}"
    d.mkdir(mode=0o755)
    link = d / ("rtx" + secrets.token_hex(6))
    link.symlink_to("/bin/true")
    yield link
    link.unlink()
    d.rmdir()


def execs(prog: Path) -> list[tuple[list[bytes], bool]]:
    """Run the cases; returns (argv passed, as nobody) per exec, in order."""
    cases: list[tuple[list[bytes], bool]] = [
        ([bytes(prog), b"-a", b"b c"], False),
        ([bytes(prog), *HOSTILE], False),
        ([bytes(prog), b"x" * 300, b"after"], False),  # the filename + this > DATA_LEN
        ([bytes(prog), *(str(i).encode() for i in range(30))], False),  # > TRACE_MAXARG
        ([bytes(prog), b"as-nobody"], True),
    ]
    for argv, nobody in cases:
        subprocess.run(argv, check=True, preexec_fn=as_nobody if nobody else None)
    return cases


def test_exec_records_hold_filename_argv_uid_and_mark_truncation(prog: Path) -> None:
    with traced(TraceOptions(events=("exec",), comm=prog.name)) as s:
        cases = execs(prog)
        records, dropped, lost = counts(s)
    recs = records[records["h"]["type"] == LAYOUT.type_id("exec")]
    recs = recs[np.argsort(recs["h"]["ts"], kind="stable")]  # the CPUs' rings, merged
    assert len(recs) == len(cases) and dropped == 0 and lost == 0
    fname = bytes(prog)
    for rec, (argv, nobody) in zip(recs, cases, strict=True):
        data, aux2 = bytes(rec["data"]), int(rec["aux2"])
        assert data.split(b"\0")[0] == fname
        got = exec_data.argv(data, aux2)
        assert got is not None
        used = exec_data.used_len(data, aux2)
        assert used <= DATA_LEN
        size = len(fname) + 1 + sum(len(a) + 1 for a in argv)
        if size <= DATA_LEN and len(argv) <= exec_data.MAXARG:
            assert got == argv and not exec_data.truncated(aux2)
        else:
            assert exec_data.truncated(aux2)
            assert got == [a[: len(g)] for a, g in zip(argv, got, strict=False)]
            assert got[:-1] == argv[: len(got) - 1]  # all but the last whole
        ugid = int(rec["value"])  # uid | gid << 32
        assert (ugid & 0xFFFFFFFF, ugid >> 32) == ((65534, 65534) if nobody else (0, 0))
        assert int(rec["h"]["cgroup"]) > 0
    long_rec = recs[2]
    got = exec_data.argv(bytes(long_rec["data"]), int(long_rec["aux2"]))
    # filename, argv[0] (the same path), then the x's up to the record's last byte (NUL)
    assert got is not None and got[0] == fname
    assert got[1:] == [b"x" * (DATA_LEN - 1 - 2 * (len(fname) + 1))]
    many = exec_data.argv(bytes(recs[3]["data"]), int(recs[3]["aux2"]))
    assert many == [bytes(prog), *(str(i).encode() for i in range(len(many) - 1))]
    assert len(many) == exec_data.MAXARG  # 31 given: the first 20 kept, marked


def test_json_shows_argv_uid_and_cgroup(prog: Path) -> None:
    proc = Trace("--json", "--events", "exec", "-c", prog.name)
    cases = execs(prog)
    proc.signal(signal.SIGINT)
    out, _ = proc.finish()
    evs = [json.loads(line) for line in out if line.strip()]
    execs_ = sorted((e for e in evs if e["type"] == "exec"), key=lambda e: e["ts"])
    assert len(execs_) == len(cases)
    for ev, (argv, nobody) in zip(execs_, cases, strict=True):
        assert ev["filename"] == str(prog)
        text = [a.decode("utf-8", "backslashreplace") for a in argv]
        if not ev["argv_truncated"]:
            assert ev["argv"] == text
        else:
            assert ev["argv"][:-1] == text[: len(ev["argv"]) - 1]
        assert ev["uid"] == ev["gid"] == (65534 if nobody else 0)
        assert isinstance(ev["cgroup"], int) and ev["cgroup"] > 0
    assert execs_[1]["argv"][1:] == [a.decode("utf-8", "backslashreplace") for a in HOSTILE]
    assert [e["argv_truncated"] for e in execs_] == [False, False, True, True, False]
