"""Fixtures of the export tests: a real nats-server per test (random port, temp store)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.servers import NatsServer, nats_server


@pytest.fixture
def nats(tmp_path: Path) -> Iterator[NatsServer]:
    with nats_server(tmp_path / "nats") as server:
        yield server
