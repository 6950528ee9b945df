"""The parser of every ``ringtool`` command: argparse, with a usage error as one line,
and options only ever spelled out in full."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from ringtool.event.safe_text import printable

#: A usage error's message at most (a value quoted whole could be megabytes).
MESSAGE_MAX = 480


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (``PROG: MESSAGE``, at most
    :data:`MESSAGE_MAX` characters: a longer one is cut in the middle, keeping what is
    wrong and the fix at its end; the help is one ``--help`` away) and exit status 2.

    Options are never abbreviated (``allow_abbrev=False``, also for every subcommand's
    parser, which ``add_parser`` makes of this class): ``--event`` is not ``--events``,
    so a flag added later cannot change what an old command line means. An option the
    parser does not know is refused by the parser that got it (``ringtool trace:
    unrecognized option --event: did you mean --events? ...``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        for extra in extras:
            if extra.startswith("-") and len(extra) > 1 and not extra[1:2].isdigit():
                self.error(unknown_option(extra, list(self._option_string_actions)))
        return parsed, extras

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


def unknown_option(given: str, known: Sequence[str]) -> str:
    """The message for option ``given`` that is none of ``known``: the options it
    abbreviates (or, else, the nearest spellings) as the fix."""
    name = given.split("=", 1)[0]
    longs = [k for k in known if k.startswith("--")]
    longer = [k for k in longs if k.startswith(name)] if name.startswith("--") else []
    import difflib  # here: only a misspelled name needs it

    near = longer or difflib.get_close_matches(name, known, n=3, cutoff=0.75)
    if not near:
        return f"unrecognized option {name}: see --help"
    text = f"unrecognized option {name}: did you mean {' or '.join(sorted(near))}?"
    return text + (" (options are not abbreviated)" if longer else "")


__all__ = ["MESSAGE_MAX", "ArgumentParser", "unknown_option"]
