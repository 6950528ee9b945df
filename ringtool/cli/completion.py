"""Shell completion for ``ringtool``, generated from its argparse parser by shtab.

``ringtool --print-completion [bash|zsh|tcsh]`` prints the script (setup installs the
bash one as ``/etc/bash_completion.d/ringtool``). Subcommands, flags and the values
of flags with ``choices`` complete from the parser itself, so the script is never out
of step with the code it was generated from. Flags whose value is a path (metavar
``FILE``, ``PATH`` or ``SOCKET``) complete file names; ``-i/--iface`` completes the
network interfaces (``/sys/class/net``).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

SHELLS = ("bash", "zsh", "tcsh")
PATH_METAVARS = {"FILE", "PATH", "SOCKET"}
#: bash: the network interfaces for ``-i IFACE`` (shtab calls it with the word typed)
_IFACES_BASH = """
_ringtool_ifaces() {
  compgen -W "$(command ls /sys/class/net 2>/dev/null)" -- "$1"
}
"""


def _actions(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """Every action of ``parser`` and of its subcommands' parsers, recursively."""
    for action in parser._actions:
        yield action
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # aliases share a parser
                yield from _actions(sub)


def mark_paths(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Tell shtab which values are files and which are interfaces (``action.complete``,
    shtab's hook); returns ``parser``."""
    import shtab

    for action in _actions(parser):
        if action.metavar in PATH_METAVARS:
            action.complete = shtab.FILE  # type: ignore[attr-defined]
        elif action.dest == "iface":
            action.complete = {"bash": "_ringtool_ifaces"}  # type: ignore[attr-defined]
    return parser


def script(parser: argparse.ArgumentParser, shell: str = "bash") -> str:
    """The completion script of the root ``parser`` for ``shell`` (one of
    :data:`SHELLS`)."""
    import shtab

    preamble = _IFACES_BASH if shell == "bash" else ""
    text: str = shtab.complete(mark_paths(parser), shell=shell, preamble=preamble)
    return text


__all__ = ["PATH_METAVARS", "SHELLS", "mark_paths", "script"]
