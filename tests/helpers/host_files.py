"""Running scripts/host-files.sh in a temporary prefix (``RINGTOOL_PREFIX``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.paths import ROOT

SCRIPT = ROOT / "scripts" / "host-files.sh"
VENV = Path(sys.prefix)  # the venv running the tests: its bin/python and bin/ringtool


def host_files(prefix: Path, *args: str, bashrc: Path | None = None) -> str:
    """Run the script under ``prefix`` (``bashrc``: the bash.bashrc it edits,
    RINGTOOL_BASHRC); its stdout (it must succeed)."""
    env = dict(os.environ, RINGTOOL_PREFIX=str(prefix), PYTHONPATH=str(ROOT))
    if bashrc is not None:
        env["RINGTOOL_BASHRC"] = str(bashrc)
    done = subprocess.run(["bash", str(SCRIPT), *args], env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout
