"""Build a bench's C helper (``ringtool/bench/csrc/*.c``) with the system compiler.

The sources are committed files compiled as they are (``cc -O2 SOURCE -o OUT
[LIBS]``), at bench time, into a directory the caller owns (a temporary one)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ringtool.errors import BenchError

CSRC = Path(__file__).parent / "csrc"


def build_c(name: str, out: Path, libs: tuple[str, ...] = ()) -> Path:
    """Compile ``csrc/<name>`` into the executable ``out``; :class:`BenchError` when no
    compiler is installed or it fails (with its first error line)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise BenchError("the bench needs a C compiler (cc): apt-get install gcc")
    source = CSRC / name
    proc = subprocess.run([cc, "-O2", "-o", str(out), str(source), *libs], capture_output=True,
                          text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"]
        errors = [ln for ln in lines if "error" in ln] or lines
        raise BenchError(f"cc {name}: {errors[0]}")
    return out


__all__ = ["CSRC", "build_c"]
