"""Every block of README.md and docs/*.md marked runnable runs as written (as root, in
a private network and mount namespace: tests/helpers/docs_run.py): exit status 0, no
traceback, and the output a page shows under it where it shows one."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.docs_run import expected_outputs, pages, run_page
from tests.helpers.paths import ROOT

# host_only: the commands as a reader types them; what depends on the kernel is
# tested on every kernel by the tests of each command.
pytestmark = [pytest.mark.kernel, pytest.mark.slow, pytest.mark.host_only]


def test_the_pages_people_start_from_have_runnable_blocks() -> None:
    names = [p.name for p in pages()]
    assert "README.md" in names and "fleet.md" in names, names


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_runnable_blocks_run_as_written(page: Path, tmp_path: Path) -> None:
    ran = run_page(page, tmp_path / "priv")
    want = expected_outputs(page)
    for n, r in enumerate(ran):
        where = f"{page.name}:{r.block.line}"
        shown = (f"{where}\n{r.block.text}\n--- stdout\n{r.stdout[-3000:]}\n"
                 f"--- stderr\n{r.stderr[-3000:]}")  # fmt: skip
        assert r.status == 0, shown
        assert "Traceback" not in r.stdout + r.stderr, shown
        if n in want:
            assert r.stdout == want[n], shown
