"""Options are spelled out in full: argparse's prefix matching is off on every parser
(``--event`` was taken as ``--events``, so a flag added later could change what an old
command line meant). An abbreviation or a misspelling is one line naming the option and
the fix, exit 2. The real CLI, run as a subprocess (refused before any privilege check)."""

from __future__ import annotations

import argparse

import pytest

from ringtool.__main__ import COMMANDS
from ringtool.cli.main import build_parser
from tests.helpers.cli_values import one_line_usage_error, run_cli


@pytest.mark.parametrize(
    ("argv", "fix"),
    [
        (["trace", "--event", "exec", "-d", "1", "--json"], "did you mean --events?"),
        (["trace", "--no-t", "-d", "1"], "did you mean --no-tui?"),
        (["trace", "--interv", "2", "-d", "1", "--json"], "did you mean --interval?"),
        (["kmes-read", "--foll"], "did you mean --follow?"),
    ],
)
def test_an_abbreviation_is_refused_in_one_line(argv: list[str], fix: str) -> None:
    line = one_line_usage_error(run_cli(argv), argv[0], argv[1])
    assert line.endswith(f"{fix} (options are not abbreviated)"), line


def test_a_misspelling_names_the_nearest_option() -> None:
    line = one_line_usage_error(run_cli(["trace", "--evnts", "exec"]), "trace", "--evnts")
    assert line.endswith("did you mean --events?"), line


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def test_no_parser_abbreviates() -> None:
    parsers = _parsers(build_parser(commands=COMMANDS))
    assert len(parsers) == len(COMMANDS) + 1
    assert [p.prog for p in parsers if p.allow_abbrev] == []
