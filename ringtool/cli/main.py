"""``ringtool`` entry point: parses the subcommand and turns ringtool errors into one
clear line on stderr (never a traceback for a problem the user can fix)."""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Sequence

from ringtool.errors import PrivilegeError, RingtoolError

# Each module has ``register(subparsers)`` which adds its parser and sets ``func``
# (a callable taking the parsed args and returning the exit status).
SUBCOMMAND_MODULES = (
    "ringtool.cli.trace",
    "ringtool.cli.bridge",
    "ringtool.cli.kmes_read",
    "ringtool.cli.bench",
    "ringtool.cli.doctor",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ringtool",
        description="eBPF tracing with ringtool's own ring buffer and perf buffer consumers.",
        epilog="examples:\n  sudo ringtool doctor\n  sudo ringtool trace -d 10 --json\n"
        "  sudo ringtool bench ringbuf",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # not written yet
                continue
            raise
        module.register(subs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # Piping into `head`: die quietly on a closed stdout instead of a traceback.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        status = args.func(args)
    except PrivilegeError as exc:
        print(f"ringtool: {exc}", file=sys.stderr)
        return 1
    except RingtoolError as exc:
        print(f"ringtool {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return int(status or 0)


if __name__ == "__main__":
    sys.exit(main())
