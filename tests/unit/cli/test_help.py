"""``ringtool [SUBCOMMAND] --help``: plain text a user reads in a terminal, with examples
in the bcc tools' style and no reStructuredText markup from the developers' docstrings.
The real CLI, run as a subprocess (no root needed: --help exits before any check)."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.helpers.paths import RINGTOOL

SUBCOMMANDS = ("trace", "bridge", "kmes-read", "bench", "collect", "doctor", "replay", "query")
#: RST roles (:class:`x`, :func:`x`, :mod:`x`, ...), inline literals (``x``), interpreted
#: text (`x`), and section signs (a developer's section reference means nothing here).
MARKUP = re.compile(r":[a-z]+:`|``|`[^`\s][^`]*`|§")


def _help(*argv: str) -> str:
    proc = subprocess.run(
        [*RINGTOOL, *argv, "--help"],
        capture_output=True, text=True, timeout=60, env={"COLUMNS": "100", "PATH": "/usr/bin"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    return proc.stdout


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_subcommand_help_has_examples_and_no_markup(command: str) -> None:
    text = _help(command)
    assert "examples:" in text
    examples = text.split("examples:\n", 1)[1].rstrip().splitlines()
    assert examples, text
    # every example line is a command line of this subcommand (bcc style: indented,
    # optionally with sudo, a trailing '# what it does' comment where it helps)
    for line in examples:
        assert re.match(r"  (sudo )?ringtool ", line), line
    assert any(f"ringtool {command}" in line for line in examples), examples
    found = MARKUP.findall(text)
    assert not found, f"markup in 'ringtool {command} --help': {found}"


def test_top_level_help_lists_every_subcommand() -> None:
    text = _help()
    assert "examples:" in text
    assert not MARKUP.findall(text)
    for command in SUBCOMMANDS:
        assert re.search(rf"^\s+{re.escape(command)}\b", text, re.M), command
