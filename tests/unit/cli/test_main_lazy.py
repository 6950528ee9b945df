"""``ringtool NAME ...`` builds NAME's parser alone (startup time): the table of
subcommands matches what the modules register, each subcommand's help is the same as
in the full parser, and the other subcommands' modules are not imported."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from ringtool.cli.main import SUBCOMMANDS, build_parser
from tests.helpers.paths import ROOT


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_the_table_names_what_each_module_registers() -> None:
    assert set(subparsers(build_parser())) == set(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        assert set(subparsers(build_parser(name))) == {name}
    assert set(subparsers(build_parser("no-such-command"))) == set(SUBCOMMANDS)


@pytest.mark.parametrize("name", sorted(SUBCOMMANDS))
def test_help_is_the_same_alone_and_in_the_full_parser(name: str) -> None:
    full = subparsers(build_parser())[name].format_help()
    assert subparsers(build_parser(name))[name].format_help() == full
    assert full.startswith(f"usage: ringtool {name} ")


@pytest.mark.parametrize("name", ["trace", "doctor"])
def test_other_subcommands_are_not_imported(name: str) -> None:
    code = (
        "import sys\n"
        "from ringtool.cli.main import SUBCOMMAND_MODULES, main\n"
        "try:\n"
        f"    main([{name!r}, '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(m for m in SUBCOMMAND_MODULES if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    assert proc.stdout.startswith(f"usage: ringtool {name} ")
    assert proc.stderr.split() == [SUBCOMMANDS[name]]
