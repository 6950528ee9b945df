"""Every flag of every ``ringtool`` command that takes a value, fed generated bad and
odd values (empty, huge and negative numbers, unicode, regex and path junk, a FIFO,
``/dev/zero``, a directory, a name too long): parsing either succeeds or exits 2 with
one line on stderr, never a traceback, and within a few seconds (an alarm fails a value
that blocks). The parsers are the real ones (the program's, with ``bench``), walked,
and run in this process with ``parse_args``; checks made after parsing, at a command's
start, run in a child for a small curated sample."""

from __future__ import annotations

import argparse
import contextlib
import io
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ringtool.__main__ import COMMANDS
from ringtool.cli.main import build_parser
from tests.helpers.cli_values import fifo, one_line_usage_error, run_cli, shared_dir

#: A value for the positional arguments a command needs besides the flag under test.
NEEDS = {"collect": ["nats://127.0.0.1:4222"], "bench": ["merge"], "mark": ["text"]}
#: Seconds one parse may take at most.
PARSE_LIMIT = 5


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


PARSER = build_parser(None, COMMANDS)
#: (command, the action's name on the command line, positional?) of every value taken.
FLAGS = [
    (name, max(a.option_strings, key=len) if a.option_strings else a.dest, not a.option_strings)
    for name, sub in _subparsers(PARSER).items()
    for a in sub._actions
    if a.nargs != 0 and not isinstance(a, argparse._HelpAction)
]


@pytest.fixture(scope="module")
def junk() -> Iterator[dict[str, str]]:
    with shared_dir() as d:
        yield {
            "fifo": str(fifo(d / "fifo")), "dir": str(d), "long": str(d / ("n" * 300)),
            "deep": "/tmp/" + "d/" * 3000, "zero": "/dev/zero", "missing": str(d / "none"),
        }  # fmt: skip


TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\0"), max_size=40)
NUMBERS = st.one_of(
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["9" * 5000, "1e999", "-0", "0x10", "²", "٣", "1_000", " 1", "1K", "-1M"]),
)
REGEX_JUNK = st.sampled_from(
    ["(", "a{99999999999}", "(" * 2000 + ")" * 2000, "[z-a]", "*", "(?P<", "\\", "a" * 5000]
)
PATH_JUNK = st.sampled_from(["fifo", "dir", "long", "deep", "zero", "missing"])
PATHISH = st.lists(st.sampled_from(["..", ".", "/", "x", ":", "[::1]", "nats:", "~", "%"]),
                   max_size=8).map("".join)  # fmt: skip


class Hung(Exception):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hung(f"a parse took more than {PARSE_LIMIT} s")


def _parse(argv: list[str]) -> tuple[int, str]:
    """Exit status (0: parsed) and stderr of parsing ``argv``."""
    err = io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(PARSE_LIMIT)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            PARSER.parse_args(argv)
        return 0, err.getvalue()
    except SystemExit as exc:
        return int(exc.code or 0), err.getvalue()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize(("command", "flag", "positional"), FLAGS,
                         ids=[f"{c}-{f}" for c, f, _ in FLAGS])  # fmt: skip
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.one_of(TEXT, NUMBERS, REGEX_JUNK, PATH_JUNK, PATHISH, st.just("")))
def test_a_value_parses_or_is_one_line(
    junk: dict[str, str], command: str, flag: str, positional: bool, value: str
) -> None:
    value = junk.get(value, value)
    # the value under test is the command's one positional, or FLAG=VALUE after it
    argv = [command, value] if positional else [command, *NEEDS.get(command, []), f"{flag}={value}"]
    status, err = _parse(argv)
    # (the message may quote the value: hypothesis once tried the word "Traceback")
    assert "Traceback (most recent call last)" not in err, err
    if status == 0:
        assert err == "", err
        return
    assert status == 2, (status, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"ringtool {command}: "), err[:2000]
    assert len(lines[0]) < 1000, lines[0][:300]


#: Small values one of which a numeric flag takes (a count, a size with its suffix).
SMALL = ("1", "64K", "1M")
#: Beyond every bound a numeric flag may have: a wait this long overflows
#: (threading.TIMEOUT_MAX is about 9.2e9 s), and so does a size or count.
HUGE = ("1e12", "1" + "0" * 20, str(2**64), "64000000000G")


def _numeric(action: argparse.Action) -> bool:
    """Whether ``action``'s ``type=`` takes one of :data:`SMALL` and gives a number."""
    for text in SMALL:
        try:
            value = action.type(text) if callable(action.type) else None
        except argparse.ArgumentTypeError:
            continue
        if isinstance(value, int | float) and not isinstance(value, bool):
            return True
    return False


NUMERIC = [
    pytest.param(a, id=f"{name}-{max(a.option_strings, key=len)}")
    for name, sub in _subparsers(PARSER).items()
    for a in sub._actions
    if a.option_strings and a.nargs != 0 and _numeric(a)
]


@pytest.mark.parametrize("action", NUMERIC)
def test_every_numeric_flag_has_an_upper_bound(action: argparse.Action) -> None:
    # a duration, interval, size or count the parser takes may later be handed to a
    # wait, a datetime, a struct or an mmap: a value beyond every sane bound is refused
    # while parsing, not an OverflowError at the end of the run
    assert callable(action.type)
    for text in HUGE:
        with pytest.raises(argparse.ArgumentTypeError):
            action.type(text)


def test_every_command_is_walked() -> None:
    assert {c for c, _, _ in FLAGS} >= {"trace", "bridge", "collect", "kmes-read", "bench", "mark"}
    assert ("trace", "--name", False) in FLAGS and ("collect", "url", True) in FLAGS
    numeric = {max(p.values[0].option_strings, key=len) for p in NUMERIC}  # type: ignore[union-attr]
    assert {"--export-drain", "--duration", "--window-ms", "--capacity"} <= numeric, numeric


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["trace", "--window-us", "5"], "--window-us"),
        (["trace", "-i", "nosuchif0"], "-i"),
        (["trace", "--fields", "comm", "--quiet"], "--fields"),
        (["trace", "--max-buffer-mb", "64", "--no-grow"], "--max-buffer-mb"),
        (["trace", "--pcap", "/tmp/ringtool-never.pcapng"], "--pcap"),
        (["trace", "--export-creds", "{creds}"], "--export-creds"),  # needs --export
    ],
)
def test_checks_after_parsing_are_one_line(tmp_path: Path, argv: list[str], flag: str) -> None:
    (tmp_path / "creds").write_text("user:password\n")
    argv = [a.format(creds=tmp_path / "creds") for a in argv]
    one_line_usage_error(run_cli(argv), argv[0], flag)


def test_good_values_parse() -> None:
    assert _parse(["trace", "--name=^(bash|sh)$", "--buffer-pages=64", "-d", "1.5"]) == (0, "")
    assert _parse(["collect", "nats://127.0.0.1:4222", "--max-hosts", "10"]) == (0, "")
