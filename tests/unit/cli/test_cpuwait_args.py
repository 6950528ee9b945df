"""``trace --events cpuwait``: --hist takes it (its histograms), --cgroup is refused
with it (its waits are not selected by cgroup), one line each (nothing loaded)."""

from __future__ import annotations

import pytest

from ringtool.cli.main import build_parser
from ringtool.cli.trace import check
from ringtool.errors import UsageError


def test_hist_takes_the_cpuwait_source_alone() -> None:
    check(build_parser().parse_args(["trace", "--events", "cpuwait", "--hist"]))
    with pytest.raises(UsageError, match="add syscalls, disk or cpuwait"):
        check(build_parser().parse_args(["trace", "--events", "open", "--hist"]))


def test_cgroup_is_refused_with_cpuwait_only() -> None:
    args = build_parser().parse_args(["trace", "--events", "open,cpuwait"])
    args.cgroup = 1234  # a parsed --cgroup (its directory's id; parsing needs cgroup v2)
    with pytest.raises(UsageError, match=r"^--cgroup does not select cpuwait's waits"):
        check(args)
    args = build_parser().parse_args(["trace", "--events", "open"])
    args.cgroup = 1234
    check(args)
