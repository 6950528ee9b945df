"""vagrant/qemu-tcg-single.sh, the QEMU libvirt runs for the TCG test VM: libvirt's
``-accel tcg`` gets ``thread=single``; every other argument reaches QEMU unchanged
(one argument each, spaces and all). A fake QEMU prints what it was given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

WRAPPER = ROOT / "vagrant" / "qemu-tcg-single.sh"
FAKE = "import json, sys; print(json.dumps(sys.argv[1:]))"


def _run(tmp_path: Path, *args: str) -> list[str]:
    fake = tmp_path / "qemu"
    fake.write_text(f"#!{sys.executable}\n{FAKE}\n")
    fake.chmod(0o755)
    env = {**os.environ, "RINGTOOL_VM_QEMU": str(fake)}
    out = subprocess.run(
        ["bash", str(WRAPPER), *args], env=env, capture_output=True, text=True, check=True
    )
    got: list[str] = json.loads(out.stdout)
    return got


@pytest.mark.parametrize(
    ("given", "passed"),
    [
        (["-accel", "tcg"], ["-accel", "tcg,thread=single"]),
        (["-accel", "tcg,tb-size=256"], ["-accel", "tcg,tb-size=256,thread=single"]),
        (["-accel", "tcg,thread=multi"], ["-accel", "tcg,thread=multi"]),  # said: kept
        (["-accel", "kvm"], ["-accel", "kvm"]),
        (["-name", "tcg", "-accel", "tcg"], ["-name", "tcg", "-accel", "tcg,thread=single"]),
        (["tcg", "-smp", "2"], ["tcg", "-smp", "2"]),  # not after -accel: not an accelerator
        (["-machine", "none", "-qmp", "unix:/x y,server"], None),  # libvirt's probe
        ([], []),
    ],
)
def test_only_the_tcg_accelerator_changes(
    tmp_path: Path, given: list[str], passed: list[str] | None
) -> None:
    assert _run(tmp_path, *given) == (given if passed is None else passed)


def test_arguments_with_spaces_and_globs_stay_whole(tmp_path: Path) -> None:
    odd = ["-drive", "file=/a b/*.img,if=virtio", "-append", "a  b\tc", "", "-accel", "tcg"]
    assert _run(tmp_path, *odd) == [*odd[:-1], "tcg,thread=single"]
