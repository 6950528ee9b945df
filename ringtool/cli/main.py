"""The CLI's entry: parses the subcommand and turns every problem the user can fix into
one line on stderr, never a traceback. The ``ringtool`` program
(:mod:`ringtool.__main__`, the console script) is :func:`main` with the table of
subcommands that includes the layers above the CLI (``ringtool bench``);
``python -m ringtool.cli.main`` runs the CLI layer's own subcommands.

Exit status:

* 0 success (or what the subcommand returns);
* 2 a bad flag value or combination (``ringtool SUBCOMMAND: argument FLAG: ...``),
  found before any privilege check or BPF program load
  (:mod:`ringtool.cli.validate`, the subcommand's ``check(args)``);
* 1 any other :class:`ringtool.errors.RingtoolError` or OS error, as its first line
  (a missing privilege: ``ringtool trace needs root ...``);
* 130 Ctrl-C before the subcommand could stop cleanly, silently;
  SIGINT/SIGTERM/SIGHUP/SIGUSR1 from the first line of :func:`main` are held
  (:class:`ringtool.trace.signals.StartSignals`): ``trace`` acts on them once it is
  ready, the other subcommands get SIGINT/SIGTERM/SIGHUP back before they start and
  keep ignoring SIGUSR1;
* 141 stdout closed by the reader (``ringtool trace --json | head -1``), silently,
  after the subcommand unwound (BPF programs and TC filters are detached).

``RINGTOOL_DEBUG=1`` in the environment shows the full traceback instead.
"""

from __future__ import annotations

import argparse
import os
import select
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ringtool import __version__
from ringtool.cli.parser import ArgumentParser
from ringtool.cli.std_streams import whole_writes
from ringtool.errors import PrivilegeError, RingtoolError, UsageError
from ringtool.event.safe_text import printable
from ringtool.trace.signals import StartSignals

#: ``register(subs)`` of one subcommand: adds its parser to ``subs`` (argparse's
#: subparsers) and sets ``func`` (a callable taking the parsed args and returning the
#: exit status) and optionally ``check`` (raises UsageError for a bad flag combination;
#: runs before ``func``).
Register = Callable[[Any], None]


# Each function imports its subcommand's module when called: ``ringtool NAME ...``
# imports NAME's module alone (the others pull in the KMES, export and bench code:
# startup time); the full parser (``ringtool --help``, a mistyped name) imports them all.
def _trace(subs: Any) -> None:
    from ringtool.cli import trace

    trace.register(subs)


def _bridge(subs: Any) -> None:
    from ringtool.cli import bridge

    bridge.register(subs)


def _kmes_read(subs: Any) -> None:
    from ringtool.cli import kmes_read

    kmes_read.register(subs)


def _collect(subs: Any) -> None:
    from ringtool.cli import collect

    collect.register(subs)


def _export_stream(subs: Any) -> None:
    from ringtool.cli import export_stream

    export_stream.register(subs)


def _doctor(subs: Any) -> None:
    from ringtool.cli import doctor

    doctor.register(subs)


def _mark(subs: Any) -> None:
    from ringtool.cli import mark

    mark.register(subs)


def _replay(subs: Any) -> None:
    from ringtool.cli import replay

    replay.register(subs)


def _query(subs: Any) -> None:
    from ringtool.cli import query

    query.register(subs)


#: The CLI layer's subcommands. The ``ringtool`` program (:mod:`ringtool.__main__`)
#: adds the layers above (``ringtool bench``) by passing a larger table to
#: :func:`main`.
SUBCOMMANDS: dict[str, Register] = {
    "trace": _trace,
    "bridge": _bridge,
    "kmes-read": _kmes_read,
    "collect": _collect,
    "export-stream": _export_stream,
    "doctor": _doctor,
    "mark": _mark,
    "replay": _replay,
    "query": _query,
}
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell shows for a killed writer
#: The subcommands that take the start-up's SIGINT/SIGTERM/SIGHUP/SIGUSR1 themselves
#: (:class:`ringtool.trace.signals.StartSignals`); the others get them back at once.
TAKE_SIGNALS = frozenset({"trace"})


class _PrintGenerated(argparse.Action):
    """``--print-completion SHELL`` / ``--print-manpage``: the completion script or the
    man page, generated from the root parser (so with every subcommand registered),
    printed; exit 0. For setup (scripts/host-files.sh), hidden from ``--help``."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
        values: Any, option_string: str | None = None,
    ) -> None:  # fmt: skip
        if option_string == "--print-manpage":
            from ringtool.cli.manpage import render

            text = render(parser)
        else:
            from ringtool.cli.completion import script

            text = script(parser, str(values))
        sys.stdout.write(text)
        parser.exit(0)


def build_parser(
    only: str | None = None, commands: Mapping[str, Register] = SUBCOMMANDS
) -> argparse.ArgumentParser:
    """The ``ringtool`` parser with every subcommand of ``commands``, or with
    subcommand ``only`` alone (when it is one: parsing its arguments gives the same
    result and messages, without importing the other subcommands' modules)."""
    from ringtool.cli.completion import SHELLS

    examples = "  sudo ringtool doctor\n  sudo ringtool trace -d 10 --json\n"
    if "bench" in commands:
        examples += "  sudo ringtool bench ringbuf\n"
    parser = ArgumentParser(
        prog="ringtool",
        description="eBPF tracing with ringtool's own ring buffer and perf buffer consumers.",
        epilog="examples:\n" + examples,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"ringtool {__version__}")
    parser.add_argument(
        "--print-completion", action=_PrintGenerated, choices=SHELLS, help=argparse.SUPPRESS
    )
    parser.add_argument("--print-manpage", action=_PrintGenerated, nargs=0, help=argparse.SUPPRESS)
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, register in commands.items():
        if only in commands and name != only:
            continue
        register(subs)
    return parser


def one_line(exc: BaseException) -> str:
    """The first line of an error's message, safe to print (no control characters);
    an OS error as its strerror (and file name), without the ``[Errno N]``."""
    text = str(exc)
    if isinstance(exc, OSError) and not isinstance(exc, RingtoolError) and exc.strerror:
        text = exc.strerror + (f": {exc.filename}" if exc.filename else "")
    lines = text.strip().splitlines()
    return printable(lines[0] if lines else type(exc).__name__)


def _stdout_broken() -> bool:
    """Whether stdout is a pipe whose reader has gone (poll reports POLLERR)."""
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & select.POLLERR for _fd, ev in poller.poll(0))
    except (OSError, ValueError):
        return False


def _stdout_gone() -> int:
    """stdout's reader went away: point stdout at /dev/null so the interpreter's final
    flush cannot raise again, and exit quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_BROKEN_PIPE


def _settle_stdout() -> None:
    """After the one error line: when stdout cannot take what is still buffered (a full
    disk, /dev/full, an I/O error), point it at /dev/null, so that the interpreter's
    final flush does not print a second error with a traceback-like notice."""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def main(argv: Sequence[str] | None = None, commands: Mapping[str, Register] = SUBCOMMANDS) -> int:
    """``ringtool`` with the subcommands of ``commands`` (see the module doc)."""
    # first: a SIGUSR1/SIGHUP/SIGTERM/SIGINT while starting is recorded, not fatal
    with StartSignals() as held:
        whole_writes()  # nothing lost on an unbuffered stdout (PYTHONUNBUFFERED, -u)
        argv = sys.argv[1:] if argv is None else list(argv)
        parser = build_parser(argv[0] if argv and isinstance(argv[0], str) else None, commands)
        args = parser.parse_args(argv)
        check = getattr(args, "check", None)

        def call() -> int | None:
            if args.command not in TAKE_SIGNALS:
                # a Ctrl-C while parsing: KeyboardInterrupt here; SIGUSR1 never kills
                held.release(keep_usr1_ignored=True)
            if check is not None:
                check(args)
            return args.func(args)  # type: ignore[no-any-return]

        if os.environ.get("RINGTOOL_DEBUG"):
            return int(call() or 0)
        return guarded(f"ringtool {args.command}", call)


def guarded(name: str, call: Callable[[], int | None]) -> int:
    """Run one subcommand's ``call`` and turn every problem the user can fix into one
    line on stderr and an exit status (2 for a usage error, 130 for Ctrl-C, 141 when
    stdout's reader went away); ``name`` starts each line."""
    try:
        status = call()
    except UsageError as exc:
        print(f"{name}: {one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except PrivilegeError as exc:
        print(one_line(exc), file=sys.stderr)  # "ringtool trace needs root ..."
        return 1
    except BrokenPipeError as exc:
        if _stdout_broken():
            return _stdout_gone()
        print(f"{name}: {one_line(exc)}", file=sys.stderr)
        return 1
    except (RingtoolError, OSError) as exc:
        print(f"{name}: {one_line(exc)}", file=sys.stderr)
        _settle_stdout()
        return 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return _stdout_gone()
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
