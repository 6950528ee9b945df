"""The ring growth policy (ringtool.trace.reading.growth_policy): when a ring grows or shrinks,
and the cap, as properties over random runs of samples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.errors import ArgumentError
from ringtool.trace.reading.growth_policy import (
    DEFAULT_MAX_BYTES,
    GROW_FILL,
    MAX_RING_BYTES,
    SHRINK_FILL,
    START_CAP_SHARE,
    START_PAGES_MAX,
    START_PAGES_MIN,
    BufferSample,
    GrowthPolicy,
    default_cap,
    default_max_bytes,
    default_start_pages,
    size_text,
)

BASE = 512 << 10

#: One check: per buffer (fill, dropped, busy), and the seconds since the last check.
checks = st.lists(
    st.tuples(
        st.lists(
            st.tuples(
                st.floats(0, 1),
                st.integers(0, 5) | st.just(0),
                st.booleans() | st.just(False),
            ),
            min_size=3,
            max_size=3,
        ),
        st.floats(0, 40),
    ),
    max_size=30,
)


def _run(
    policy: GrowthPolicy, steps: list[tuple[list[tuple[float, int, bool]], float]]
) -> list[dict[int, int]]:
    """Runs the checks, each decision applied at once; asserts the invariants of every
    decision on the way; returns the sizes after each check."""
    sizes = dict.fromkeys(range(3), BASE)
    capped_seen: set[tuple[int, int]] = set()
    now = 0.0
    history = []
    for per_buffer, dt in steps:
        now += dt
        samples = [
            BufferSample(b, sizes[b], fill, dropped, busy)
            for b, (fill, dropped, busy) in enumerate(per_buffer)
        ]
        in_use = sum(sizes.values())
        decisions = policy.decide(samples, in_use=in_use, now=now)
        assert len({d.buffer_id for d in decisions}) == len(decisions)  # one per buffer
        for d in decisions:
            s = samples[d.buffer_id]
            assert not s.busy  # a switch in flight is left alone
            assert d.size == s.size
            pressed = s.dropped > 0 or s.fill >= GROW_FILL
            if d.kind == "grow":
                step = 8 if s.dropped else 4 if s.fill >= 2 * GROW_FILL else 2
                assert pressed and d.to in {s.size * f for f in (2, 4, 8) if f <= step}
                if d.to < s.size * step:  # the bigger steps did not fit
                    assert in_use + 2 * d.to > policy.max_bytes or 2 * d.to > MAX_RING_BYTES
                assert in_use + d.to <= policy.max_bytes  # old and new rings fit the cap
                in_use += d.to
                sizes[d.buffer_id] = d.to
                capped_seen = {c for c in capped_seen if c[0] != d.buffer_id}
            elif d.kind == "capped":
                assert pressed and (in_use + d.to > policy.max_bytes or d.to > MAX_RING_BYTES)
                # told once per size (again only after the ring changed size)
                assert (d.buffer_id, d.size) not in capped_seen
                capped_seen.add((d.buffer_id, d.size))
            else:
                assert not pressed and s.fill < SHRINK_FILL and s.dropped == 0
                assert d.to == s.size // 2 >= BASE
                sizes[d.buffer_id] = d.to
                capped_seen = {c for c in capped_seen if c[0] != d.buffer_id}
        for size in sizes.values():
            assert BASE <= size <= MAX_RING_BYTES and size & (size - 1) == 0
        history.append(dict(sizes))
    return history


@settings(max_examples=150, deadline=None)
@given(checks, st.integers(3, 64))
def test_decisions_keep_the_cap_sizes_and_rules(
    steps: list[tuple[list[tuple[float, int, bool]], float]], cap_rings: int
) -> None:
    _run(GrowthPolicy(BASE, cap_rings * BASE, quiet_s=30.0), steps)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 5), st.floats(0, 10))
def test_a_drop_grows_the_ring_eightfold_at_once(level: int, after: float) -> None:
    policy = GrowthPolicy(BASE, 1 << 30)
    policy.decide([BufferSample(0, BASE, 0.0, 0)], in_use=BASE, now=0.0)
    size = BASE << level
    [d] = policy.decide([BufferSample(0, size, 0.1, 7)], in_use=size, now=after)
    assert (d.kind, d.to, d.why) == ("grow", 8 * size, "dropped 7")


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6), st.floats(1, 100))
def test_an_idle_ring_steps_down_to_its_base_one_quiet_period_a_step(
    level: int, quiet: float
) -> None:
    policy = GrowthPolicy(BASE, 1 << 30, quiet_s=quiet)
    size, now = BASE << level, 0.0
    policy.decide([BufferSample(0, size, 0.9, 0, busy=True)], in_use=size, now=now)
    steps = 0
    while size > BASE:
        assert not policy.decide([BufferSample(0, size, 0.01, 0)], in_use=size,
                                 now=now + quiet * 0.99)  # fmt: skip
        now += quiet * 1.001
        [d] = policy.decide([BufferSample(0, size, 0.01, 0)], in_use=size, now=now)
        assert d.kind == "shrink" and d.to == size // 2
        size, steps = d.to, steps + 1
    assert steps == level
    assert not policy.decide([BufferSample(0, size, 0.0, 0)], in_use=size, now=now + 10 * quiet)


def test_a_busy_moment_restarts_the_quiet_period() -> None:
    policy = GrowthPolicy(BASE, 1 << 30, quiet_s=10)
    big = 4 * BASE
    assert not policy.decide([BufferSample(0, big, 0.0, 0)], in_use=big, now=0)
    assert not policy.decide([BufferSample(0, big, 0.2, 0)], in_use=big, now=9)  # not idle
    assert not policy.decide([BufferSample(0, big, 0.0, 0)], in_use=big, now=18)
    [d] = policy.decide([BufferSample(0, big, 0.0, 0)], in_use=big, now=19)
    assert d.kind == "shrink"


def test_capped_when_old_and_new_would_pass_the_cap() -> None:
    policy = GrowthPolicy(BASE, 4 * BASE)
    in_use = 2 * BASE  # two CPUs' rings
    [d] = policy.decide([BufferSample(0, BASE, 0.0, 1)], in_use=in_use, now=0)
    assert (d.kind, d.to) == ("grow", 2 * BASE)  # old + new: 4 * BASE fits, 6 would not
    [d] = GrowthPolicy(BASE, 64 * BASE).decide(
        [BufferSample(0, BASE, 0.6, 0)], in_use=in_use, now=0
    )
    assert (d.kind, d.to, d.why) == ("grow", 4 * BASE, "60% full")
    in_use = 3 * BASE  # the old ring retired: BASE + 2 * BASE
    [d] = policy.decide([BufferSample(0, 2 * BASE, 0.0, 3)], in_use=in_use, now=1)
    assert d.kind == "capped" and d.to == 4 * BASE and d.why == "dropped 3"
    assert not policy.decide([BufferSample(0, 2 * BASE, 0.9, 9)], in_use=in_use, now=2)
    policy.max_bytes = 8 * BASE  # room again (e.g. another ring shrank)
    [d] = policy.decide([BufferSample(0, 2 * BASE, 0.9, 0)], in_use=in_use, now=3)
    assert d.kind == "grow"


@given(st.integers(0, 1 << 45), st.integers(0, 1 << 32))
def test_default_cap(ram: int, start: int) -> None:
    cap = default_max_bytes(ram, start)
    assert cap >= start
    assert cap <= max(start, DEFAULT_MAX_BYTES)
    assert cap == start or cap <= ram // 64


def test_default_cap_examples() -> None:
    assert default_max_bytes(24 << 30, 1 << 20) == 256 << 20  # 1/64 is 384 MiB: capped
    assert default_max_bytes(4 << 30, 1 << 20) == 64 << 20
    assert default_max_bytes(32 << 20, 2 << 20) == 2 << 20  # never below the start


def test_bad_policy_arguments() -> None:
    with pytest.raises(ArgumentError, match="power of two"):
        GrowthPolicy(3000, 1 << 20)
    with pytest.raises(ArgumentError, match="quiet_s"):
        GrowthPolicy(BASE, 1 << 20, quiet_s=-1)


def test_size_text() -> None:
    assert [size_text(n) for n in (512, 4096, BASE, 1 << 20, 3 << 19, 1 << 30)] == [
        "512 B", "4 KiB", "512 KiB", "1 MiB", "1.5 MiB", "1 GiB",
    ]  # fmt: skip


@given(cap=st.integers(0, 1 << 40), ncpus=st.integers(1, 4096))
def test_default_start_pages_fits_an_eighth_of_the_cap(cap: int, ncpus: int) -> None:
    pages = default_start_pages(cap, ncpus)
    assert START_PAGES_MIN <= pages <= START_PAGES_MAX and pages & (pages - 1) == 0
    fits = ncpus * pages * 4096 <= cap // START_CAP_SHARE
    assert fits or pages == START_PAGES_MIN  # only the floor may exceed the share
    if pages < START_PAGES_MAX:  # and it is the largest that fits
        assert ncpus * 2 * pages * 4096 > cap // START_CAP_SHARE


def test_default_start_pages_examples() -> None:
    gib = 1 << 30
    assert default_start_pages(default_cap(24 * gib), 2) == 4096  # 16 MiB per CPU
    assert default_start_pages(default_cap(4 * gib), 2) == 1024  # the VM: a 64 MiB cap
    assert default_start_pages(default_cap(24 * gib), 8) == 1024
    assert default_start_pages(default_cap(gib), 2) == 256  # a 16 MiB cap
    assert default_start_pages(default_cap(256 * gib), 64) == 128  # many CPUs
