"""The ``ringtool`` program starts no BLAS threads: numpy's OpenBLAS would start one per
CPU at import, spinning for work ringtool never gives it."""

from __future__ import annotations

import os
import subprocess
import sys

_PROBE = """
import os, sys
import ringtool.__main__ as program
try:
    program.main(["trace", "--help"])
except SystemExit:
    pass
import numpy  # as a trace's first module that needs it
print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
"""


def _run(env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          env=env, timeout=60, check=True)  # fmt: skip
    return done.stdout.splitlines()[-1].split()  # after the help text


def test_the_program_imports_numpy_with_one_thread() -> None:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    assert _run(env) == ["1", "1"]


def test_a_value_the_user_set_stays() -> None:
    assert _run({**os.environ, "OPENBLAS_NUM_THREADS": "3"})[0] == "3"
