"""Where the repository is and how to run ringtool from it, named once for every suite."""

from __future__ import annotations

import sys
from pathlib import Path

#: The repository root (tests run with it as the working directory of their children).
ROOT = Path(__file__).resolve().parents[2]
#: The Python running the tests (the venv's, with BCC).
PY = sys.executable
#: ``ringtool`` as a command line: ``[*RINGTOOL, "trace", ...]``.
RINGTOOL = [PY, "-m", "ringtool"]
