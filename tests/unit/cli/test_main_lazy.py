"""``ringtool NAME ...`` builds NAME's parser alone (startup time): the table of
subcommands matches what the functions register, each subcommand's help is the same as
in the full parser, and the other subcommands' modules are not imported. ``ringtool
bench`` is registered by the program (:mod:`ringtool.__main__`), above the CLI: the
CLI's own table does not name it, and nothing in ``ringtool.cli`` imports the bench."""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys

import pytest

from ringtool.__main__ import COMMANDS
from ringtool.cli.main import SUBCOMMANDS, build_parser
from tests.helpers.paths import ROOT

#: The module each subcommand's registration imports.
MODULES = {
    "trace": "ringtool.cli.trace",
    "bridge": "ringtool.cli.bridge",
    "kmes-read": "ringtool.cli.kmes_read",
    "collect": "ringtool.cli.collect",
    "export-stream": "ringtool.cli.export_stream",
    "doctor": "ringtool.cli.doctor",
    "mark": "ringtool.cli.mark",
    "replay": "ringtool.cli.replay",
    "query": "ringtool.cli.query",
    "bench": "ringtool.bench.command",
}


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_the_table_names_what_each_function_registers() -> None:
    assert set(COMMANDS) == set(MODULES) and set(SUBCOMMANDS) == set(MODULES) - {"bench"}
    assert set(subparsers(build_parser(None, COMMANDS))) == set(COMMANDS)
    assert set(subparsers(build_parser())) == set(SUBCOMMANDS)
    for name in COMMANDS:
        assert set(subparsers(build_parser(name, COMMANDS))) == {name}
    assert set(subparsers(build_parser("no-such-command", COMMANDS))) == set(COMMANDS)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_help_is_the_same_alone_and_in_the_full_parser(name: str) -> None:
    full = subparsers(build_parser(None, COMMANDS))[name].format_help()
    assert subparsers(build_parser(name, COMMANDS))[name].format_help() == full
    assert full.startswith(f"usage: ringtool {name} ")


@pytest.mark.parametrize("name", ["trace", "doctor", "bench"])
def test_other_subcommands_are_not_imported(name: str) -> None:
    code = (
        "import sys\n"
        "from ringtool.__main__ import main\n"
        "try:\n"
        f"    main([{name!r}, '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(' '.join(m for m in {sorted(MODULES.values())!r} if m in sys.modules), "
        "file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, check=True)  # fmt: skip
    assert proc.stdout.startswith(f"usage: ringtool {name} ")
    assert proc.stderr.split() == [MODULES[name]]


def test_the_cli_imports_no_module_above_it() -> None:
    """Every import in ``ringtool/cli`` is a statement import-linter sees (no
    ``importlib`` by a string) and none names the bench or the program."""
    for path in sorted((ROOT / "ringtool" / "cli").glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for mod in names:
                assert mod != "importlib" and not mod.startswith("importlib."), path
                assert not mod.startswith(("ringtool.bench", "ringtool.__main__")), (path, mod)
