"""The ``ringtool(1)`` man page, generated from the argparse parser.

``ringtool --print-manpage > ringtool.1`` (setup installs it as
``/usr/local/share/man/man1/ringtool.1``; the date in its title line is today's, or
``SOURCE_DATE_EPOCH``'s when set, for a reproducible page). One page: NAME, SYNOPSIS, DESCRIPTION,
then one section per subcommand with its usage, description, every option (flags,
value name, help, choices) and its examples, then EXIT STATUS. Everything comes from
the parser the CLI itself uses, so the page cannot list a flag the code lacks.

Output is plain man(7) roff. Text from the parser is escaped (:func:`roff`): a
backslash becomes ``\\e``, a hyphen ``\\-`` (so flags copy and search as ASCII), and a
line that would start with ``.`` or ``'`` (a roff request) is prefixed with ``\\&``.
"""

from __future__ import annotations

import argparse
import datetime
import os

from ringtool import __version__

EXIT_STATUS = (
    ("0", "success"),
    ("1", "an error, in one line on stderr (no privilege, no such interface, ...)"),
    ("2", "a bad flag value or combination, before anything is loaded"),
    ("130", "interrupted by Ctrl-C before the command could stop cleanly"),
    ("141", "stdout closed by its reader (e.g. piped into head), after a clean stop"),
)


def roff(text: str) -> str:
    """``text`` escaped for a roff text line (see the module doc)."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    lines = [("\\&" + ln) if ln.startswith((".", "'")) else ln for ln in out.split("\n")]
    return "\n".join(lines)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _summaries(parser: argparse.ArgumentParser) -> dict[str, str]:
    """Subcommand -> its one-line ``help``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return {a.dest: a.help or "" for a in action._choices_actions}
    return {}


def _usage(parser: argparse.ArgumentParser) -> str:
    """The usage lines, continuation lines indented by 4 (argparse aligns them)."""
    first, *rest = parser.format_usage().strip().removeprefix("usage: ").splitlines()
    return "\n".join([first, *("    " + line.strip() for line in rest)])


def _option(action: argparse.Action) -> list[str]:
    """``.TP`` entry of one option or positional."""
    if action.option_strings:
        if action.nargs == 0:
            head = ", ".join(f"\\fB{roff(s)}\\fR" for s in action.option_strings)
        else:
            meta = action.metavar or (
                "{" + ",".join(map(str, action.choices)) + "}"
                if action.choices
                else action.dest.upper()
            )
            head = ", ".join(
                f"\\fB{roff(s)}\\fR \\fI{roff(str(meta))}\\fR" for s in action.option_strings
            )
    else:
        head = f"\\fI{roff(str(action.metavar or action.dest))}\\fR"
    help_text = "" if action.help in (None, argparse.SUPPRESS) else str(action.help)
    if "%(default)" in help_text:
        help_text = help_text % {"default": action.default}
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        help_text += f" (one of: {', '.join(map(str, action.choices))})"
    return [".TP", head, roff(help_text.strip())]


def _examples(epilog: str | None) -> tuple[str, list[str]]:
    """An epilog's prose and its ``examples:`` lines."""
    if not epilog or "examples:" not in epilog:
        return (epilog or "").strip(), []
    prose, _, rest = epilog.partition("examples:")
    return prose.strip(), [ln.strip() for ln in rest.strip("\n").splitlines() if ln.strip()]


def _section(name: str, sub: argparse.ArgumentParser, summary: str) -> list[str]:
    out = [f'.SS "{roff(name)}"', roff(summary) + ".", ".PP", ".nf", roff(_usage(sub)), ".fi"]
    if sub.description:
        out += [".PP", roff(" ".join(sub.description.split()))]
    for group in sub._action_groups:
        actions = [a for a in group._group_actions if a.help != argparse.SUPPRESS]
        actions = [a for a in actions if not isinstance(a, argparse._HelpAction)]
        if not actions:
            continue
        out += [".PP", f"\\fB{roff(group.title or 'options')}:\\fR"]
        for action in actions:
            out += _option(action)
    prose, examples = _examples(sub.epilog)
    if prose:
        out += [".PP", roff(" ".join(prose.split()))]
    if examples:
        out += [".PP", "Examples:", ".PP", ".RS 4", ".nf", *map(roff, examples), ".fi", ".RE"]
    return out


def _today() -> datetime.date:
    """Today, or the day of ``SOURCE_DATE_EPOCH`` (reproducible builds) when it is set."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if epoch.isascii() and epoch.isdigit():
        try:
            return datetime.datetime.fromtimestamp(int(epoch), datetime.UTC).date()
        except (OverflowError, OSError, ValueError):
            pass  # beyond the calendar: today
    return datetime.date.today()


def render(parser: argparse.ArgumentParser, date: datetime.date | None = None) -> str:
    """The whole page for the ``ringtool`` parser (``date`` in the title line)."""
    day = (date or _today()).isoformat()
    subs = _subparsers(parser)
    summaries = _summaries(parser)
    out = [
        f'.TH RINGTOOL 1 "{day}" "ringtool {roff(__version__)}" "User Commands"',
        ".SH NAME",
        f"ringtool \\- {roff(parser.description or '')}",
        ".SH SYNOPSIS",
        ".nf",
        "\\fBringtool\\fR [\\fB\\-h\\fR] [\\fB\\-\\-version\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]",
        *(f"\\fBringtool {roff(n)}\\fR [\\fIOPTIONS\\fR]" for n in subs),
        ".fi",
        ".SH DESCRIPTION",
        roff(parser.description or ""),
        "Each command below has its own options; \\fBringtool \\fICOMMAND\\fB \\-\\-help\\fR "
        "shows them too.",
        ".SH OPTIONS",
        *_option(next(a for a in parser._actions if "--version" in a.option_strings)),
        ".SH COMMANDS",
    ]
    for name, sub in subs.items():
        out += _section(f"ringtool {name}", sub, summaries.get(name, ""))
    out += [".SH EXIT STATUS"]
    for code, meaning in EXIT_STATUS:
        out += [".TP", code, roff(meaning)]
    out += [
        ".SH ENVIRONMENT",
        ".TP",
        "RINGTOOL_DEBUG",
        "set to 1: show the full traceback of an error instead of its one line",
        ".SH SEE ALSO",
        "\\fBbpftrace\\fR(8), \\fBexecsnoop\\-bpfcc\\fR(8), \\fBopensnoop\\-bpfcc\\fR(8), "
        "\\fBtshark\\fR(1)",
    ]
    return "\n".join(out) + "\n"


__all__ = ["render", "roff"]
