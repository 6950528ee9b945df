"""The log-linear bucket math of the syscalls source (mirrored from bpf/trace_syscalls.c):
every value lies in its bucket, the bucket's middle is within MAX_ERROR of it, a
quantile is within MAX_ERROR of the true one, and printed figures within 10%."""

from __future__ import annotations

import math
import re

from hypothesis import given
from hypothesis import strategies as st

from ringtool.trace.reading.latency_buckets import (
    INDEXES,
    MAX_ERROR,
    SUB,
    approx,
    approx_duration,
    bucket_of,
    bucket_range,
    middle,
    quantile,
    to_log2,
)

U64 = st.integers(0, 2**64 - 1)
LATENCIES = st.integers(1, 10**12)  # 1 ns .. 1000 s


def test_small_values_are_exact_and_buckets_tile_the_line() -> None:
    assert [bucket_of(v) for v in range(2 * SUB)] == list(range(2 * SUB))
    assert bucket_range(bucket_of(300_000_000)) == (293_601_280, 301_989_887)
    assert bucket_of(2**64 - 1) == INDEXES - 1
    for index in range(1, INDEXES):  # contiguous: each starts where the last ended
        assert bucket_range(index)[0] == bucket_range(index - 1)[1] + 1


@given(U64)
def test_every_value_lies_in_its_bucket_and_near_its_middle(v: int) -> None:
    index = bucket_of(v)
    low, high = bucket_range(index)
    assert 0 <= index < INDEXES and low <= v <= high
    assert abs(middle(index) - v) <= MAX_ERROR * v
    assert low.bit_length() == high.bit_length()  # inside one log2 slot
    assert to_log2({index: 1}) == {v.bit_length(): 1}


@given(U64, U64)
def test_buckets_keep_the_order(a: int, b: int) -> None:
    if a <= b:
        assert bucket_of(a) <= bucket_of(b)


@given(st.lists(LATENCIES, min_size=1, max_size=300), st.sampled_from([0.5, 0.9, 0.99, 1.0]))
def test_a_quantile_is_within_the_bound_of_the_true_one(values: list[int], q: float) -> None:
    hist: dict[int, int] = {}
    for v in values:
        hist[bucket_of(v)] = hist.get(bucket_of(v), 0) + 1
    true = sorted(values)[max(1, math.ceil(q * len(values))) - 1]
    assert abs(quantile(hist, q) - true) <= MAX_ERROR * true


_UNIT = {"ns": 1.0, "µs": 1e3, "ms": 1e6, "s": 1e9, "ks": 1e12}


@given(LATENCIES)
def test_a_printed_quantile_is_within_ten_percent(v: int) -> None:
    shown = approx_duration(middle(bucket_of(v)))
    m = re.fullmatch(r"(\d+(?:\.\d)?)(ns|µs|ms|s|ks)", shown)
    assert m is not None and len(shown) <= 6, shown
    value = float(m[1]) * _UNIT[m[2]]
    assert abs(value - v) <= 0.10 * v, (v, shown)
    assert len(m[1].replace(".", "").strip("0")) <= 2 or m[2] == "ns"  # 2 digits


def test_approx_keeps_two_significant_digits() -> None:
    assert approx(534_186_557) == 530_000_000
    assert approx(2975.5) == 3000
    assert approx(0.0) == 0.0
    assert [approx_duration(x) for x in (3e8, 2.096e7, 2.05e6, 850, 5, 1.5e9)] == [
        "300ms", "21ms", "2.0ms", "850ns", "5ns", "1.5s",
    ]  # fmt: skip
    assert quantile({}) == 0.0
