"""The parser of every ``ringtool`` command: argparse, with a usage error as one line."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from ringtool.event.safe_text import printable

#: A usage error's message at most (a value quoted whole could be megabytes).
MESSAGE_MAX = 480


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (``PROG: MESSAGE``, at most
    :data:`MESSAGE_MAX` characters: a longer one is cut in the middle, keeping what is
    wrong and the fix at its end; the help is one ``--help`` away) and exit status 2."""

    def error(self, message: str) -> NoReturn:
        text = printable(message)
        if len(text) > MESSAGE_MAX:
            half = MESSAGE_MAX // 2
            text = f"{text[:half]}...{text[-half:]}"
        self.exit(2, f"{self.prog}: {text}\n")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            sys.stderr.write(message)
        sys.exit(status)


__all__ = ["MESSAGE_MAX", "ArgumentParser"]
