"""Scaled numbers for fixed-width cells: never longer than their bound, never cut."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.trace.units import count, duration_ns


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"), (7.4, "7"), (9999, "9999"), (9999.6, "10.0k"), (10_000, "10.0k"),
        (10_849, "10.8k"), (99_949, "99.9k"), (99_960, "100k"), (999_499, "999k"),
        (999_500, "1.00M"), (8_528_577, "8.53M"), (1.5e9, "1.50G"), (2**64, "18.4E"),
        (-12_345, "-12.3k"), (float("nan"), "-"), (float("inf"), "-"),
    ],
)  # fmt: skip
def test_count(n: float, text: str) -> None:
    assert count(n) == text


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "0ns"), (850, "850ns"), (999.4, "999ns"), (999.6, "1.00µs"), (1_500, "1.50µs"),
        (12_345, "12.3µs"), (999_999, "1.00ms"), (250e6, "250ms"), (1.5e9, "1.50s"),
        (999e9, "999s"), (2**64, "18.4Gs"), (float("nan"), "-"),
    ],
)  # fmt: skip
def test_duration(ns: float, text: str) -> None:
    assert duration_ns(ns) == text


@given(st.floats(min_value=0, max_value=1e21, allow_nan=False))
def test_count_fits_5_characters(n: float) -> None:
    assert len(count(n)) <= 5


@given(st.floats(min_value=0, max_value=1e27, allow_nan=False))
def test_duration_fits_6_characters(ns: float) -> None:
    assert len(duration_ns(ns)) <= 6
