"""Which output ``ringtool trace`` picks, and that its examples say so: on a terminal
the dashboard, unless the command asks for a stream (``--no-tui``, ``--json``,
``--csv``, ``--quiet``, or ``--fields``/``--stats``/``--flight-recorder``, which only a
stream shows); into a pipe or a file, always a stream. Every example in README.md and
in ``ringtool trace --help`` whose comment does not say TUI or dashboard streams on a
terminal (before: ``--events open -x``, "failed opens like opensnoop -x", opened the
dashboard)."""

from __future__ import annotations

import re
import shlex

import pytest

from ringtool.cli.main import build_parser
from ringtool.cli.trace import EPILOG, output_mode
from tests.helpers.cli_values import one_line_usage_error, run_cli
from tests.helpers.paths import ROOT

#: A comment that promises the dashboard.
SAYS_DASHBOARD = re.compile(r"\b(TUI|dashboard)\b", re.IGNORECASE)


def _mode(command: str, *, terminal: bool = True) -> str:
    """The output of a shell command line ``[sudo] ringtool trace ...`` (up to a pipe
    or redirection; a ``--cgroup`` value left out: it names a directory of another
    machine)."""
    line = re.split(r"\s(?:\d?>|\|)", command, maxsplit=1)[0]
    argv = shlex.split(line)
    argv = argv[argv.index("ringtool") + 1 :]
    if "--cgroup" in argv:
        at = argv.index("--cgroup")
        del argv[at : at + 2]
    return output_mode(build_parser("trace").parse_args(argv), terminal=terminal)


def _readme_examples() -> list[tuple[str, str]]:
    """``(command, its comment)`` of each ``ringtool trace`` line in README.md's shell
    blocks: the comment lines above it (since a blank line) and its own."""
    found: list[tuple[str, str]] = []
    text = (ROOT / "README.md").read_text()
    for block in re.findall(r"```sh\n(.*?)```", text, re.DOTALL):
        comment = ""
        for line in block.splitlines():
            if not line.strip():
                comment = ""
            elif line.startswith("#"):
                comment += line + " "
            elif "ringtool trace" in line.partition("#")[0] and "--help" not in line:
                command, _, own = line.partition("  #")
                found.append((command, comment + own))
                comment = ""
    return found


def _help_examples() -> list[tuple[str, str]]:
    lines = EPILOG.split("examples:\n", 1)[1].splitlines()
    return [line.partition("  #")[::2] for line in lines if "ringtool trace" in line]


@pytest.mark.parametrize(("command", "comment"), _readme_examples() + _help_examples())
def test_an_example_streams_unless_it_says_dashboard(command: str, comment: str) -> None:
    dashboard = _mode(command) == "tui"
    assert dashboard == bool(SAYS_DASHBOARD.search(comment)), (command, comment)


def test_the_examples_are_found() -> None:
    readme, help_ = _readme_examples(), _help_examples()
    assert len(readme) >= 8 and len(help_) >= 8
    assert any("--events open -x" in c for c, _ in readme + help_)


@pytest.mark.parametrize(
    ("flags", "terminal", "mode"),
    [
        ("", True, "tui"),
        ("", False, "columns"),
        ("--no-tui", True, "columns"),
        ("--stats", True, "columns"),
        ("--fields pid,comm", True, "columns"),
        ("--flight-recorder 64K", True, "columns"),
        ("--json --stats", True, "json"),
        ("--csv --stats", True, "csv"),
        ("--quiet", True, "quiet"),
        ("--events exec -x -p 1", True, "tui"),
    ],
)
def test_the_rule(flags: str, terminal: bool, mode: str) -> None:
    assert _mode(f"ringtool trace {flags}", terminal=terminal) == mode


def test_stats_with_quiet_is_one_line() -> None:
    one_line_usage_error(run_cli(["trace", "--quiet", "--stats", "-d", "1"]), "trace", "--stats")
