"""exec argv decoding, its export compaction, -n and --cgroup resolution.

The kernel side (real execs, real cgroups) is tested in tests/kernel/
tests/kernel/trace/test_exec_args.py and test_task_filters.py; here the pure parts."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from ringtool.errors import CgroupPathError
from ringtool.event import exec_data
from ringtool.event.decode import Decoder
from ringtool.event.detail import detail
from ringtool.event.layout import load_layout
from ringtool.event.records import Records
from ringtool.export.wire import compact_rows, exec_min_len, expand_rows
from ringtool.trace.reading.filters import NameFilter, kernel_defines, resolve_cgroup
from ringtool.trace.writers.output_columns import format_event

LAYOUT = load_layout()
EXEC = LAYOUT.type_id("exec")
OPEN = LAYOUT.type_id("open")


def exec_record(data: bytes, aux2: int, stale: bytes = b"") -> np.ndarray:  # type: ignore[type-arg]
    arr = np.zeros(1, dtype=LAYOUT.event)
    arr["h"]["type"] = EXEC
    arr["data"] = (data + stale)[:256]
    arr["aux2"] = aux2
    return arr


def test_the_flags_are_the_headers() -> None:
    c = LAYOUT.constants
    assert c["TRACE_ARGS_TRUNCATED"] == exec_data.TRUNCATED
    assert c["TRACE_ARGS_MISSING"] == exec_data.MISSING
    assert exec_data.MAXARG == 20 and exec_data.ARGC_MASK == 0xFFFF


@pytest.mark.parametrize(
    ("data", "aux2", "argv", "used"),
    [
        (b"/bin/ls\0ls\0-l\0", 2, [b"ls", b"-l"], 14),
        (b"/bin/ls\0ls\0\0\0", 3, [b"ls", b"", b""], 13),  # empty arguments
        (b"/bin/ls\0ls", 3, [b"ls", b"", b""], 10),  # numpy dropped the trailing NULs
        (b"/bin/ls\0ls\0STALE", 1, [b"ls"], 11),  # stale bytes after the last one
        (b"/bin/ls\0", exec_data.MISSING, None, 8),
        (b"/bin/ls\0a\0", 1 | exec_data.TRUNCATED, [b"a"], 10),
        (b"/x\0" + b"a\0" * 30, 0xFFFF, [b"a"] * 20, 3 + 40),  # the count is capped
    ],
)
def test_argv_and_used_len(data: bytes, aux2: int, argv: list[bytes] | None, used: int) -> None:
    assert exec_data.argv(data, aux2) == argv
    assert exec_data.used_len(data, aux2) == used


def test_decoded_exec_shows_argv_and_marks_truncation_and_hostile_bytes() -> None:
    data = b"/usr/bin/printf\0printf\0\x1b[2J\0\xff\xfe\0a b\0"
    arr = exec_record(data, 4 | exec_data.TRUNCATED, stale=b"\x1bSTALE")
    (ev,) = Decoder(LAYOUT, realtime_offset_ns=0).decode(arr)
    assert ev["argv"] == ["printf", "\x1b[2J", "\\xff\\xfe", "a b"]
    assert ev["argv_truncated"] is True
    # columns: the arguments after argv[0], shell-quoted, then "..." (the output makes
    # the escape printable: tests/unit/event/test_safe_text.py)
    assert detail(ev) == "/usr/bin/printf '\x1b[2J' '\\xff\\xfe' 'a b' ... ppid=0 uid=0"
    line = format_event(ev, None)
    assert "\x1b" not in line and line.endswith("'\\x1b[2J' '\\xff\\xfe' 'a b' ... ppid=0 uid=0")
    arr = exec_record(b"/bin/true\0", exec_data.MISSING)
    (ev,) = Decoder(LAYOUT, realtime_offset_ns=0).decode(arr)
    assert ev["argv"] is None and detail(ev) == "/bin/true ppid=0 uid=0"


def test_export_rows_keep_exec_arguments_and_zero_the_stale_words() -> None:
    data = b"/bin/sh\0sh\0-c\0echo hello world\0"
    arr = np.concatenate([exec_record(data, 3, stale=b"S" * 40), exec_record(b"/x\0", 0)])
    keep_plain, _ = compact_rows(arr)
    assert keep_plain == 8  # the first NUL alone would cut the arguments off
    keep, body = compact_rows(arr, exec_min_len(arr))
    assert keep == 32  # 31 bytes of strings, rounded up to words
    back = expand_rows(body, 2, keep, LAYOUT.event)
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    assert [e["argv"] for e in dec.decode(back)] == [["sh", "-c", "echo hello world"], []]
    off = LAYOUT.event.fields["data"][1]
    assert not back.view(np.uint8).reshape(2, -1)[:, off + 32 :].any()  # stale: zeroed


def test_name_filter_matches_regex_on_the_comm_and_keeps_order() -> None:
    arr = np.zeros(5, dtype=LAYOUT.event)
    arr["h"]["comm"] = [b"bash", b"sshd", b"bash-x", b"\xffbash", b"zsh"]
    arr["h"]["pid"] = np.arange(5)
    keep = NameFilter(re.compile(r"^(ba|z)sh"))
    assert keep.keep(arr)["h"]["pid"].tolist() == [0, 2, 4]
    assert keep.keep(arr[:1]) is not None and len(keep.keep(arr[:0])) == 0
    # the comm is matched as decoded: an invalid byte is the text \xff
    assert NameFilter(re.compile(r"^\\xffbash$")).keep(arr)["h"]["pid"].tolist() == [3]


def test_name_filter_keeps_every_marker() -> None:
    """Filters never apply to markers (docs/trace.md): their comm is the marker's."""
    arr = np.zeros(4, dtype=LAYOUT.event)
    arr["h"]["comm"] = [b"bash", b"python3", b"sshd", b"ringtool"]
    arr["h"]["type"] = [LAYOUT.type_id(t) for t in ("exec", "mark", "exec", "mark")]
    arr["h"]["pid"] = np.arange(4)
    keep = NameFilter(re.compile(r"^bash$"), always=LAYOUT.type_id("mark"))
    assert keep.keep(arr)["h"]["pid"].tolist() == [0, 1, 3]
    assert NameFilter(re.compile(r"^bash$")).keep(arr)["h"]["pid"].tolist() == [0]


def test_kernel_defines() -> None:
    assert kernel_defines() == {}
    cg = resolve_cgroup(str(_cgroup2_root()))
    assert cg.level == 0 and cg.id == 1
    assert kernel_defines(tid=5, uid=0, cgroup=cg, failed_only=True) == {
        "TRACE_FILTER_TID": 1, "TRACE_FILTER_UID": 1, "TRACE_FILTER_CGROUP": 1,
        "TRACE_FILTER_FAILED": 1,
    }  # fmt: skip


def _cgroup2_root() -> Path:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        _dev, mnt, fstype = line.split()[:3]
        if fstype == "cgroup2":
            return Path(mnt)
    pytest.fail("no cgroup2 mount on this machine")


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("", "empty"),
        ("/nonexistent-cg", "No such file"),
        ("/etc/hostname", "not a directory"),
        ("/tmp", "not on a cgroup v2"),
    ],
)
def test_bad_cgroup_paths_are_one_line_errors(path: str, says: str) -> None:
    with pytest.raises(CgroupPathError, match=says) as exc:
        resolve_cgroup(path)
    assert "\n" not in str(exc.value)


def test_cgroup_level_counts_from_the_root(tmp_path: Path) -> None:
    root = _cgroup2_root()
    # the cgroup2 root's own entries are files: a directory one level down, if any
    subdirs = [d for d in root.iterdir() if d.is_dir()]
    if subdirs:
        cg = resolve_cgroup(str(subdirs[0]))
        assert cg.level == 1 and cg.id == subdirs[0].stat().st_ino
    link = tmp_path / "link"
    link.symlink_to(root)
    assert resolve_cgroup(str(link)).level == 0  # a symlink is followed


def test_csv_and_field_columns_write_argv_as_json_and_flags_as_json_booleans() -> None:
    import csv
    import io
    import json

    from ringtool.trace.writers.output_fields import CsvOutput, FieldColumnOutput

    data = b'/bin/echo\0echo\0a,b\0q"x\0'
    arr = exec_record(data, 3 | exec_data.TRUNCATED)
    dec = Decoder(LAYOUT, realtime_offset_ns=0)
    buf = io.StringIO()
    out = CsvOutput(buf, dec, ["argv", "argv_truncated", "uid"], err=io.StringIO())
    out.start([], [])
    out.batch(Records(arr))
    rows = list(csv.reader(io.StringIO(buf.getvalue())))
    assert rows[1][0] == '["echo", "a,b", "q\\"x"]' and json.loads(rows[1][0])[2] == 'q"x'
    assert rows[1][1:] == ["true", "0"]
    buf = io.StringIO()
    cols = FieldColumnOutput(buf, dec, ["argv_truncated", "argv"], width=None)
    cols.batch(Records(arr))
    assert buf.getvalue().split() == ["true", '["echo",', '"a,b",', '"q\\"x"]']
