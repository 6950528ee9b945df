"""``trace --cost``/``--no-cost``: the run's config says on, never, or (default) while
the output wants them; both at once is one usage line (nothing loaded)."""

from __future__ import annotations

import pytest

from ringtool.cli.main import build_parser
from ringtool.cli.trace import check, settings
from ringtool.errors import UsageError
from ringtool.export.trace_hook import hook_options


@pytest.mark.parametrize(
    ("flags", "cost"), [([], None), (["--cost"], True), (["--no-cost"], False)]
)
def test_cost_flags_make_the_config(flags: list[str], cost: bool | None) -> None:
    args = build_parser().parse_args(["trace", "--json", *flags])
    check(args)
    _, cfg = settings(args, hook_options(args))
    assert cfg.cost is cost


def test_cost_and_no_cost_is_a_usage_error() -> None:
    args = build_parser().parse_args(["trace", "--cost", "--no-cost"])
    with pytest.raises(UsageError, match=r"^--cost turns .* --no-cost never: give one"):
        check(args)
