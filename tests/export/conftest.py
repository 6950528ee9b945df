"""Fixtures of the export tests: a real nats-server per test (random port, temp store)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.fleet_broker import fleet_broker
from tests.helpers.servers import NatsServer, nats_server


@pytest.fixture
def nats(tmp_path: Path) -> Iterator[NatsServer]:
    with nats_server(tmp_path / "nats") as server:
        yield server


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[NatsServer]:
    """nats-server with docs/fleet.md's configuration block; the stream made by its
    admin user (:mod:`tests.helpers.fleet_broker`)."""
    with fleet_broker(tmp_path) as server:
        yield server
