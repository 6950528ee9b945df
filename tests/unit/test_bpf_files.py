"""Finding the BPF sources (ringtool/bpf_files.py) and shipping them (pyproject.toml):
fake packages on a temporary ``sys.path`` stand for an installed ringtool, a checkout,
a broken install and a zipped one."""

from __future__ import annotations

import importlib
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ringtool import bpf_files
from ringtool.bpf_files import BpfSourcesMissing, bpf_dir, bpf_file, candidates, require_bpf_dir
from tests.helpers.paths import ROOT


@pytest.fixture
def on_path(tmp_path: Path) -> Iterator[Path]:
    """``tmp_path`` on ``sys.path`` for the test (its fake packages forgotten after)."""
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    before = set(sys.modules)
    try:
        yield tmp_path
    finally:
        sys.path.remove(str(tmp_path))
        for name in set(sys.modules) - before:
            del sys.modules[name]


def make_package(where: Path, name: str, *, data: bool, checkout: bool) -> Path:
    pkg = where / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    if data:
        (pkg / "bpf").mkdir()
        (pkg / "bpf" / "trace_event.h").write_text("/* packaged */\n")
        (pkg / "bpf" / "trace_open.c").write_text("/* packaged */\n")
    if checkout:
        (where / "pyproject.toml").write_text("[project]\n")
        (where / "bpf").mkdir()
        (where / "bpf" / "trace_event.h").write_text("/* checkout */\n")
    return pkg


def test_this_checkout_uses_its_top_level_bpf_directory() -> None:
    assert bpf_dir() == ROOT / "bpf"
    assert require_bpf_dir() == ROOT / "bpf"
    assert bpf_file("trace_open.c") == ROOT / "bpf" / "trace_open.c"


def test_package_data_wins_over_a_checkout(on_path: Path) -> None:
    pkg = make_package(on_path, "fake_both", data=True, checkout=True)
    assert candidates("fake_both") == (pkg / "bpf", on_path / "bpf")
    assert bpf_dir("fake_both") == pkg / "bpf"
    assert bpf_file("trace_open.c", "fake_both").read_text() == "/* packaged */\n"


def test_a_checkout_without_package_data(on_path: Path) -> None:
    make_package(on_path, "fake_checkout", data=False, checkout=True)
    assert bpf_dir("fake_checkout") == on_path / "bpf"


def test_an_install_without_the_sources_says_where_it_looked(on_path: Path) -> None:
    pkg = make_package(on_path, "fake_bare", data=False, checkout=False)
    (on_path / "bpf").mkdir()  # a bpf/ beside a package that is not in a checkout: ignored
    (on_path / "bpf" / "trace_event.h").write_text("")
    assert candidates("fake_bare") == (pkg / "bpf",)
    assert bpf_dir("fake_bare") == pkg / "bpf"
    with pytest.raises(BpfSourcesMissing, match=r"missing: looked in .*fake_bare/bpf; reinst"):
        require_bpf_dir("fake_bare")


def test_a_missing_program_is_named(on_path: Path) -> None:
    pkg = make_package(on_path, "fake_some", data=True, checkout=False)
    with pytest.raises(BpfSourcesMissing, match=f"no BPF source {pkg}/bpf/trace_nope.c"):
        bpf_file("trace_nope.c", "fake_some")


def test_a_zipped_package_has_no_usable_directory(on_path: Path) -> None:
    archive = on_path / "zipped.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("fake_zip/__init__.py", "")
        z.writestr("fake_zip/bpf/trace_event.h", "")
    sys.path.insert(0, str(archive))
    try:
        importlib.invalidate_caches()
        assert candidates("fake_zip") == ()
        with pytest.raises(BpfSourcesMissing, match="nowhere"):
            require_bpf_dir("fake_zip")
    finally:
        sys.path.remove(str(archive))


def test_the_three_users_take_the_directory_from_bpf_files() -> None:
    from ringtool.event.layout import TRACE_HEADER
    from ringtool.programs.loader import BPF_DIR, cflags_for
    from ringtool.readers.ringbuf_group import BPF_INCLUDE_DIR

    assert BPF_INCLUDE_DIR == BPF_DIR == bpf_files.bpf_dir()
    assert bpf_files.bpf_dir() / bpf_files.MARKER == TRACE_HEADER
    assert cflags_for()[0] == f"-I{bpf_files.bpf_dir()}"


def _pyproject() -> dict:  # type: ignore[type-arg]
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_pyproject_lists_every_package_and_maps_bpf() -> None:
    """The package list is explicit (``ringtool.bpf`` is mapped from bpf/): a new
    directory left out of it (code or data) would be missing from the wheel."""
    tool = _pyproject()["tool"]["setuptools"]
    listed = set(tool["packages"])
    on_disk = {
        ".".join(d.relative_to(ROOT).parts)
        for d in [ROOT / "ringtool", *(ROOT / "ringtool").rglob("*")]
        if d.is_dir() and d.name != "__pycache__"
    }
    assert on_disk | {"ringtool.bpf"} == listed
    assert tool["package-dir"] == {"ringtool.bpf": "bpf"}
    assert set(tool["package-data"]["ringtool.bpf"]) == {"*.c", "*.h"}
    assert {p.suffix for p in (ROOT / "bpf").iterdir()} <= {".c", ".h"}
