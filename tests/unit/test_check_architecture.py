"""scripts/check_architecture.py on a small checkout of its own (a temporary tree): it
passes on a true tree and fails, naming the file, on each kind of untrue text and on a
module over 400 lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

SCRIPT = ROOT / "scripts" / "check_architecture.py"

PYPROJECT = """\
[tool.importlinter]
root_package = "ringtool"

[[tool.importlinter.contracts]]
name = "layers"
type = "layers"
layers = ["ringtool.top", "ringtool.low | ringtool.side"]
"""

ARCHITECTURE = """\
# architecture

<!-- layers -->
```
ringtool.top
ringtool.low | ringtool.side
```
<!-- /layers -->

`top/run.py` reads with `low/walk.py`'s `ringtool.low.walk.walk` (`low.walk`).

| module | one line |
| --- | --- |
| `top/run.py` | the loop |
| `low/walk.py` | the walk |
| `side/pages.py` | the pages |
"""


def check(root: Path) -> tuple[int, list[str]]:
    """The script's exit status and its lines on the checkout at ``root``."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(root)], capture_output=True, text=True, timeout=60
    )
    return done.returncode, done.stderr.splitlines()


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A checkout whose orientation text is true."""
    write(tmp_path / "pyproject.toml", PYPROJECT)
    write(tmp_path / "docs" / "ARCHITECTURE.md", ARCHITECTURE)
    write(tmp_path / "ringtool" / "__init__.py", '"""The root."""\n')
    for pkg, layer in (("top", "top"), ("low", "low | side"), ("side", "low | side")):
        doc = f'"""The {pkg} package: ``{pkg}`` modules.\n\nLayer: {layer}.\n"""\n'
        write(tmp_path / "ringtool" / pkg / "__init__.py", doc)
    write(tmp_path / "ringtool" / "top" / "run.py", "from ringtool.low.walk import walk\n")
    write(tmp_path / "ringtool" / "low" / "walk.py", "def walk() -> None:\n    pass\n")
    write(tmp_path / "ringtool" / "side" / "pages.py", "PAGE = 4096\n")
    write(tmp_path / "bpf" / "walk.h", "/* read by ringtool/low/walk.py (ringtool.low.walk) */\n")
    return tmp_path


def test_a_true_tree_passes(tree: Path) -> None:
    assert check(tree) == (0, [])


def test_a_module_of_400_lines_passes_and_of_401_fails(tree: Path) -> None:
    write(tree / "ringtool" / "side" / "pages.py", "PAGE = 4096\n" * 400)
    assert check(tree) == (0, [])
    write(tree / "ringtool" / "side" / "pages.py", "PAGE = 4096\n" * 401)
    status, lines = check(tree)
    assert status == 1
    assert lines == ["check_architecture: ringtool/side/pages.py: 401 lines, over 400 (split it)"]


@pytest.mark.parametrize(
    ("file", "old", "new"),
    [
        ("bpf/walk.h", "ringtool/low/walk.py", "ringtool/top/walk.py"),  # moved
        ("bpf/walk.h", "(ringtool.low.walk)", "(ringtool.low.steps)"),
        ("docs/ARCHITECTURE.md", "`low/walk.py`'s", "`walker.py`'s"),
        ("docs/ARCHITECTURE.md", "`ringtool.low.walk.walk`", "`ringtool.low.walk.run`"),
        ("docs/ARCHITECTURE.md", "(`low.walk`)", "(`low.walking`)"),
        ("ringtool/low/__init__.py", "``low`` modules", "``low`` and ``sources`` modules"),
        ("ringtool/top/__init__.py", "modules.", "modules (ringtool/top/layout.py)."),
    ],
)
def test_a_name_of_nothing_fails(tree: Path, file: str, old: str, new: str) -> None:
    text = (tree / file).read_text()
    assert old in text
    write(tree / file, text.replace(old, new))
    status, lines = check(tree)
    assert status == 1
    assert len(lines) == 1 and lines[0].startswith(f"check_architecture: {file}: ")


def test_a_package_must_name_its_layer_and_not_number_it(tree: Path) -> None:
    init = tree / "ringtool" / "side" / "__init__.py"
    write(init, '"""Layer 1: the side package."""\n')
    status, lines = check(tree)
    assert status == 1
    assert lines == [
        "check_architecture: ringtool/side/__init__.py: its docstring numbers a layer "
        "(name it: `Layer: ...`)",
        "check_architecture: ringtool/side/__init__.py: its docstring must name its layer "
        "as `Layer: low | side`",
    ]


def test_the_module_table_and_the_layers_are_still_checked(tree: Path) -> None:
    write(tree / "ringtool" / "side" / "extra.py", "")
    arch = tree / "docs" / "ARCHITECTURE.md"
    write(arch, arch.read_text().replace("ringtool.low | ringtool.side\n```", "ringtool.low\n```"))
    status, lines = check(tree)
    assert status == 1
    assert (
        lines[0] == "check_architecture: side/extra.py: a module docs/ARCHITECTURE.md does not list"
    )
    assert "are not pyproject.toml's contract" in lines[1]
