"""The producers the readers' kernel tests share, closed after use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers.producers import PerfProducer, RingProducer


@pytest.fixture
def ring_producer() -> Iterator[RingProducer]:
    """bpf/ringbuf_test.c with a ring of 64 pages."""
    p = RingProducer(pages=64)
    yield p
    p.close()


@pytest.fixture
def perf_producer() -> Iterator[PerfProducer]:
    """bpf/perf_test.c, fresh for each test."""
    p = PerfProducer()
    yield p
    p.close()


@pytest.fixture(scope="module")
def perf() -> Iterator[PerfProducer]:
    """bpf/perf_test.c, one for the module's tests."""
    p = PerfProducer()
    yield p
    p.close()
