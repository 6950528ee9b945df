"""The runnable markers of README.md and docs/*.md (docs/development.md, "Docs that
run") are well formed, without running anything: each is right above a fence, a
runnable block is ``sh``, a saved file is used by a block of its page, an output
follows a runnable block. The blocks run in tests/kernel/test_docs_run.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.docs_run import blocks, expected_outputs
from tests.helpers.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_markers_are_well_formed(page: Path) -> None:
    found = blocks(page)
    runs = "".join(b.text for b in found if b.kind == "run")
    for b in found:
        if b.kind == "file":
            assert b.name in runs, f"{page.name}:{b.line}: {b.name} is saved but not used"
    expected_outputs(page)


def test_a_marker_that_is_not_right_above_a_block_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("<!-- runnable -->\n\n```sh\ntrue\n```\n")
    with pytest.raises(AssertionError, match="not above a fence"):
        blocks(page)
    page.write_text("<!-- runnable -->\n```python\nprint(1)\n```\n")
    with pytest.raises(AssertionError, match="must be ```sh"):
        blocks(page)
    page.write_text("<!-- runnable: output -->\n```\n1\n```\n")
    with pytest.raises(AssertionError, match="before any runnable block"):
        expected_outputs(page)


def test_blocks_and_outputs_are_read_as_written(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("text\n<!-- runnable: file a.py -->\n```python\nprint(1)\n```\n"
                    "<!-- runnable -->\n```sh\npython3 a.py\n```\n"
                    "<!-- runnable: output -->\n```\n1\n```\n```sh\nnot marked\n```\n")  # fmt: skip
    got = blocks(page)
    assert [(b.kind, b.text, b.line, b.name) for b in got] == [
        ("file", "print(1)\n", 3, "a.py"), ("run", "python3 a.py\n", 7, ""),
        ("output", "1\n", 11, "")]  # fmt: skip
    assert expected_outputs(page) == {0: "1\n"}
