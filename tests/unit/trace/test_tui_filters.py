"""The dashboard's header shows every filter of the command (``--events`` when not the
default, ``-p``, ``-t``, ``-c``, ``-u``, ``--cgroup``, ``-n``, ``-x``): a dashboard of
``-c bash -x`` must not read as the whole machine's. Before: only the ``/`` comm filter
and the pause were shown. Pure rendering (no kernel, no terminal), and the flags the
CLI turns into what the header shows."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from ringtool.cli.main import build_parser
from ringtool.cli.trace import settings
from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.export.trace_hook import hook_options
from ringtool.trace.dashboard.tui import TraceTui
from ringtool.trace.outputs import RunConfig, make_output
from tests.helpers.cgroups import cgroup2_mount
from tests.helpers.stats import new_stats


def _header(filters: tuple[str, ...], width: int = 80, started: bool = True) -> list[str]:
    """The dashboard's first two lines at ``width`` x 24 with ``filters``."""
    buf = io.StringIO()
    console = Console(file=buf, width=width, height=24, color_system=None)
    tui = TraceTui(Decoder(load_layout()), console=console, input_fd=-1, filters=filters)
    if started:
        tui.start(["exec", "open", "syscalls"], [])
        tui.stats(new_stats())
    console.print(tui.render(), height=24)
    lines = buf.getvalue().splitlines()
    assert all(len(line) <= width for line in lines)
    return lines[:2]


def _filters(*argv: str) -> tuple[str, ...]:
    args = build_parser("trace").parse_args(["trace", *argv])
    return settings(args, hook_options(args))[1].filters


def test_the_header_shows_the_filters() -> None:
    line = _header(("--events exec,open", "-p 1", "-c bash", "-u 0", "-x"), width=120)[0]
    assert line.startswith("ringtool trace  --events exec,open -p 1 -c bash -u 0 -x  up "), line


def test_the_header_shows_them_while_starting() -> None:
    line = _header(("-c bash", "-x"), started=False)[0]
    assert "-c bash -x" in line, line


def test_a_long_filter_is_cut_in_the_middle_and_the_rates_stay() -> None:
    long = "--cgroup /sys/fs/cgroup/" + "x" * 200 + "/end.scope"
    line = _header((long, "-x"))[0]
    assert "--cgroup /sys" in line and "…" in line and "end.scope -x" in line, line
    assert "events/s" in line, line  # at 80 columns


def test_no_filter_no_text() -> None:
    assert _header(())[0].startswith("ringtool trace  up "), _header(())


def test_the_filter_text_is_data() -> None:
    line = _header(("-c 'a\x1b[2Jb'",))[0]
    assert "\x1b" not in line and "\\x1b[2J" in line, line


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        ([], ()),
        (["--events", "exec,open,syscalls"], ()),  # the default, in its order
        (["-i", "lo"], ()),  # the default with -i: net added
        (["--events", "open", "-x"], ("--events open", "-x")),
        (["-p", "1", "-t", "2", "-c", "my prog", "-u", "0", "-n", "^ba(sh|r)$"],
         ("-p 1", "-t 2", "-c 'my prog'", "-u 0", "-n '^ba(sh|r)$'")),
    ],
)  # fmt: skip
def test_the_flags_become_the_filters_shown(argv: list[str], shown: tuple[str, ...]) -> None:
    assert _filters(*argv) == shown


def test_cgroup_is_shown_as_given() -> None:
    root = str(cgroup2_mount())
    assert _filters("--cgroup", root, "--no-tui") == (f"--cgroup {root}",)


def test_the_dashboard_gets_them() -> None:
    cfg = RunConfig(mode="tui", filters=("-c bash", "-x"))
    out = make_output(cfg, Decoder(load_layout()), io.StringIO())
    assert isinstance(out, TraceTui) and out.filters == ("-c bash", "-x")
