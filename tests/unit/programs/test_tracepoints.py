"""The tracefs format parser and the layout choice, on the 6.1 and 6.18 format texts.

tests/fixtures/tracefs/<version>/events/sched/sched_process_fork/format holds the
two layouts of sched_process_fork: 6.18's copied from this host's tracefs, 6.1's
written from v6.1's include/trace/events/sched.h (``__array(char, parent_comm, 16)``
etc.; x86 char was signed before 6.2's -funsigned-char, hence ``signed:1``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ringtool.errors import KernelFeatureError
from ringtool.programs.tracepoints import (
    TpField,
    TracepointFormatError,
    choose,
    layout_choices,
    layout_defines,
    parse_format,
    read_format,
)
from ringtool.trace.reading.sources import SOURCE_NAMED
from tests.helpers.paths import ROOT

TRACEFS = ROOT / "tests" / "fixtures" / "tracefs"
EXEC, OPEN = SOURCE_NAMED["exec"], SOURCE_NAMED["open"]
FORK = EXEC.needs.string_fields[0]


def fork_text(version: str) -> str:
    return (TRACEFS / version / "events/sched/sched_process_fork/format").read_text()


def test_6_1_fork_has_fixed_comm_arrays() -> None:
    f = parse_format(fork_text("6.1"))
    assert list(f) == ["common_type", "common_flags", "common_preempt_count", "common_pid",
                       "parent_comm", "parent_pid", "child_comm", "child_pid"]  # fmt: skip
    assert f["parent_comm"] == TpField("parent_comm", "char", 8, 16, True, 16)
    assert f["parent_pid"] == TpField("parent_pid", "pid_t", 24, 4, True)
    assert f["child_comm"] == TpField("child_comm", "char", 28, 16, True, 16)
    assert f["child_pid"] == TpField("child_pid", "pid_t", 44, 4, True)
    assert f["common_type"] == TpField("common_type", "unsigned short", 0, 2, False)
    assert not f["child_comm"].data_loc


def test_6_18_fork_has_data_loc_comms() -> None:
    f = parse_format(fork_text("6.18"))
    assert f["parent_comm"] == TpField("parent_comm", "__data_loc char[]", 8, 4, False)
    assert f["child_comm"] == TpField("child_comm", "__data_loc char[]", 16, 4, False)
    assert f["child_pid"] == TpField("child_pid", "pid_t", 20, 4, True)
    assert f["child_comm"].data_loc and f["child_comm"].array_len is None


@pytest.mark.parametrize(
    ("version", "value", "line"),
    [
        ("6.1", 0, "sched:sched_process_fork child_comm is char[16] at 28 "
                   "-> -DTRACE_FORK_CHILD_COMM_DATA_LOC=0"),
        ("6.18", 1, "sched:sched_process_fork child_comm is __data_loc char[] at 16 "
                    "-> -DTRACE_FORK_CHILD_COMM_DATA_LOC=1"),
    ],
)  # fmt: skip
def test_choice_per_kernel(version: str, value: int, line: str) -> None:
    choices = layout_choices(EXEC.needs.string_fields, EXEC.bpf_file, [TRACEFS / version])
    assert [c.value for c in choices] == [value]
    assert layout_defines(choices) == {"TRACE_FORK_CHILD_COMM_DATA_LOC": value}
    assert choices[0].describe() == line
    assert layout_choices(OPEN.needs.string_fields, OPEN.bpf_file, [TRACEFS / version]) == []


def test_read_format_takes_the_first_tracefs_that_has_the_file(tmp_path: Path) -> None:
    text = read_format("sched", "sched_process_fork", [tmp_path / "none", TRACEFS / "6.1"])
    assert text == fork_text("6.1")


def test_missing_format_file_names_every_path_tried(tmp_path: Path) -> None:
    with pytest.raises(TracepointFormatError) as err:
        read_format("sched", "nope", [tmp_path / "a", tmp_path / "b"])
    msg = str(err.value)
    assert str(tmp_path / "a/events/sched/nope/format") in msg and "/b/events" in msg
    assert isinstance(err.value, KernelFeatureError) and "\n" not in msg


def test_other_declarations_parse() -> None:
    text = (
        "\tfield:const char * filename;\toffset:24;\tsize:8;\tsigned:0;\n"
        "\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n"
        "\tfield:__rel_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n"
    )
    f = parse_format(text)
    assert f["filename"] == TpField("filename", "const char *", 24, 8, False)
    assert f["args"] == TpField("args", "unsigned long", 16, 48, False, 6)
    assert f["name"].rel_loc and not f["name"].data_loc


@pytest.mark.parametrize(
    ("decl", "why"),
    [
        ("field:u64 child_comm;\toffset:8;\tsize:8;\tsigned:0;", "neither __data_loc"),
        ("field:__rel_loc char[] child_comm;\toffset:8;\tsize:4;\tsigned:0;", "neither"),
        ("field:pid_t child_pid;\toffset:8;\tsize:4;\tsigned:1;", "has no field 'child_comm'"),
    ],
)
def test_unknown_layouts_are_refused_with_the_reason(decl: str, why: str) -> None:
    with pytest.raises(TracepointFormatError, match=why):
        choose(FORK, parse_format("\t" + decl + "\n"), EXEC.bpf_file)


@pytest.mark.parametrize(
    "text",
    ["", "name: x\nformat:\n", "\tfield:int x;\toffset:zero;\tsize:4;\tsigned:1;\n",
     "\tfield:;\toffset:0;\tsize:4;\tsigned:1;\n"],
)  # fmt: skip
def test_malformed_text_raises_a_format_error(text: str) -> None:
    with pytest.raises(TracepointFormatError):
        parse_format(text)
