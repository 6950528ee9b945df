"""The ``ringtool`` program (the console script, and ``python -m ringtool``): the CLI
(:mod:`ringtool.cli.main`) with every subcommand, those of the CLI layer and
``ringtool bench`` from the layer above it, registered here at the top so that no
layer imports one above it."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from ringtool.cli.main import SUBCOMMANDS, Register
from ringtool.cli.main import main as cli_main


def _bench(subs: Any) -> None:
    from ringtool.bench import command  # imported for `ringtool bench` (or the full parser)

    command.register(subs)


#: Every subcommand of ``ringtool``, in the order ``ringtool --help`` lists them.
COMMANDS: dict[str, Register] = {**SUBCOMMANDS, "bench": _bench}


#: numpy's OpenBLAS starts a thread per CPU at import, which spins waiting for work
#: (about 50 ms of CPU a start here, on the CPU a pinned trace runs on too); ringtool
#: does no linear algebra, so the program asks for none (a value the user set stays).
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "1")


def main(argv: Sequence[str] | None = None) -> int:
    """``ringtool ARGV...``; the exit status."""
    os.environ.setdefault(*BLAS_THREADS)  # before anything imports numpy
    return cli_main(argv, COMMANDS)


if __name__ == "__main__":
    sys.exit(main())
