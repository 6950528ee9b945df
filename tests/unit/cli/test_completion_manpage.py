"""Shell completion and the ringtool(1) man page, both generated from the CLI's parser:
every subcommand and flag is in them (``bench`` too, registered by the program above the
CLI), bash really completes with the script, and ``man`` renders the page without a
warning. The generators run as subprocesses, as setup runs them (``ringtool
--print-completion bash``, ``ringtool --print-manpage``)."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ringtool.__main__ import COMMANDS
from ringtool.cli.main import build_parser
from ringtool.cli.manpage import roff
from tests.helpers.paths import RINGTOOL, ROOT


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser(None, COMMANDS)
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subs.choices)


def _flags(parser: argparse.ArgumentParser) -> set[str]:
    return {s for a in parser._actions for s in a.option_strings}


def _generate(*args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [*RINGTOOL, *args], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
        env=None if env is None else os.environ | env,
    )  # fmt: skip
    assert proc.stderr == ""
    return proc.stdout


@pytest.fixture(scope="module")
def bash_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("completion") / "ringtool"
    path.write_text(_generate("--print-completion", "bash"))
    return path


def _complete(script: Path, *words: str) -> list[str]:
    """What bash offers for the last of ``words`` (``ringtool words...``)."""
    line = " ".join(("ringtool", *words))
    quoted = " ".join(f"'{w}'" for w in ("ringtool", *words))
    code = (
        f"source '{script}'; COMP_WORDS=({quoted}); COMP_CWORD={len(words)}; "
        f"COMP_LINE='{line}'; COMP_POINT={len(line)}; _shtab_ringtool; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    out = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30,
                         check=True).stdout  # fmt: skip
    return out.split()


def test_bash_script_registers_and_lists_every_flag(bash_script: Path) -> None:
    res = subprocess.run(
        ["bash", "-c", f"source '{bash_script}'; complete -p ringtool"],
        capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    assert res.stdout.strip().endswith("-F _shtab_ringtool ringtool")
    text = bash_script.read_text()
    for name, sub in _commands().items():
        assert name in text
        for flag in _flags(sub):
            assert f" {flag} " in text or f"({flag} " in text or f" {flag})" in text, flag


def test_bash_completes_commands_flags_choices_and_values(bash_script: Path) -> None:
    assert _complete(bash_script, "tr") == ["trace"]
    assert sorted(_complete(bash_script, "")) == sorted(_commands())
    assert sorted(_complete(bash_script, "trace", "--no")) == [
        "--no-cache",
        "--no-cost",
        "--no-grow",
        "--no-tui",
    ]
    assert _complete(bash_script, "bridge", "--stats") == ["--stats-interval"]
    assert "merge" in _complete(bash_script, "bench", "")  # a positional's choices
    assert _complete(bash_script, "trace", "--export-format", "r") == ["rows"]
    assert _complete(bash_script, "trace", "-i", "l") == ["lo"]  # /sys/class/net
    here = ROOT / "pyproject.toml"
    assert str(here) in _complete(bash_script, "trace", "--pcap", str(ROOT / "pyproj"))


def test_other_shells_generate() -> None:
    zsh = _generate("--print-completion", "zsh")
    assert "--no-tui" in zsh and "kmes-read" in zsh and "--stats-interval" in zsh
    assert "kmes-read" in _generate("--print-completion", "tcsh")  # tcsh: commands and choices


def test_roff_escapes() -> None:
    assert roff("--pcap FILE") == "\\-\\-pcap FILE"
    assert roff(".TH not a request\n'neither") == "\\&.TH not a request\n\\&'neither"
    assert roff("a\\b") == "a\\eb"


@pytest.fixture(scope="module")
def man_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The page as setup writes it, and as ``man`` shows it (100 columns, plain)."""
    path = tmp_path_factory.mktemp("man") / "ringtool.1"
    path.write_text(_generate("--print-manpage", env={"SOURCE_DATE_EPOCH": "1767312000"}))
    if shutil.which("man") is None:
        pytest.skip("man is not installed")
    env = {k: v for k, v in os.environ.items() if k != "MAN_KEEP_FORMATTING"}
    env |= {"MANWIDTH": "100", "LC_ALL": "C.UTF-8"}
    shown = subprocess.run(
        ["man", "-l", str(path)], capture_output=True, text=True, timeout=60, env=env,
        check=True,
    ).stdout  # fmt: skip
    return path, shown


def test_man_page_has_every_command_flag_and_example(man_page: tuple[Path, str]) -> None:
    path, shown = man_page
    # man may hyphenate long words at line ends: compare without line breaks/hyphens
    flat = " ".join(shown.replace("\u2010\n", "").split())
    assert path.read_text().startswith('.TH RINGTOOL 1 "2026-01-02"')
    for name, sub in _commands().items():
        assert f"ringtool {name} [-h]" in flat, name  # its usage
        for flag in _flags(sub):
            assert flag in flat, (name, flag)
        assert sub.epilog and "examples:" in sub.epilog
        for example in sub.epilog.split("examples:")[1].strip().splitlines():
            assert " ".join(example.split()) in flat, example
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS"):
        assert f"\n{section}\n" in shown
    assert "141" in flat and "RINGTOOL_DEBUG" in flat


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff is not installed")
def test_man_page_renders_without_warnings(man_page: tuple[Path, str]) -> None:
    path, _ = man_page
    res = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(path)],
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert res.returncode == 0 and res.stderr == "", res.stderr
