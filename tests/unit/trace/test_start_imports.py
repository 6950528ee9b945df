"""What a trace's start-up imports: the modules on its way to the start line (the
CLI, the runner, the session, the program cache, the ring group and its resizer, the
export hook), with the calls every start makes (libc, the BPF directory, the host
name, the ``trace`` parser), import none of the standard modules that only some runs
need: each costs every start milliseconds, so they are imported where used."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers.paths import ROOT

#: Imported only by the runs that use them (a ring resize, a misspelled option, a clang
#: build, a network interface, a libc found by ldconfig).
DEFERRED = ("concurrent.futures", "socket", "difflib", "importlib.resources",
            "ctypes.util", "subprocess", "tempfile", "logging", "zipfile")  # fmt: skip

CODE = """
import sys
import ringtool.cli.trace, ringtool.trace.runner, ringtool.export.trace_hook
import ringtool.trace.reading.session, ringtool.programs.program_cache
import ringtool.programs.clang_loader, ringtool.readers.ringbuf_resize
from ringtool.bpf_files import bpf_dir
from ringtool.cli.main import build_parser
from ringtool.export.config import default_host
from ringtool.kernel.libc import libc
libc(), bpf_dir(), default_host()
build_parser("trace").parse_args(["trace", "--json", "-d", "1"])
print(" ".join(m for m in {deferred!r} if m in sys.modules))
"""


def test_a_trace_start_imports_none_of_the_deferred_modules() -> None:
    proc = subprocess.run([sys.executable, "-c", CODE.format(deferred=DEFERRED)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert proc.stdout.split() == []
