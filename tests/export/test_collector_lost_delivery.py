"""A message the broker delivered to ``collect``'s consumer but that never reached it
(the fetch's answer lost with a dying node) is read later, not acknowledged unread.

Found with the three-node cluster tests: with ack policy *all*, acknowledging the next
message read also acknowledged the lost one, and ``collect`` never saw its events.
Here the loss is made on purpose: another client fetches one message of the durable
consumer and disconnects without acknowledging it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.export import finish, start_trace, wait_exported, work
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer
from tests.helpers.trace import unique_comm

pytestmark = [pytest.mark.kernel, pytest.mark.host_only]


def traced(nats: NatsServer, tmp_path: Path, n: int) -> int:
    """A ``trace --export`` run of ``n`` opens; the events it exported."""
    comm, target = unique_comm(), tmp_path / "hot"
    target.write_text("x")
    trace = start_trace(nats, comm, "--export-format", "rows")
    work(comm, target, n)
    wait_exported(trace, n)
    summary, _, _ = finish(trace)
    return int(summary["export"]["exported"])


def collect_drain(nats: NatsServer) -> dict:  # type: ignore[type-arg]
    import subprocess

    p = subprocess.run([*RINGTOOL, "collect", nats.url, "--json", "--drain", "-d", "120"],
                       cwd=ROOT, capture_output=True, text=True, timeout=180)  # fmt: skip
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    return json.loads(p.stdout.splitlines()[-1])["per_host"]["h1"]  # type: ignore[no-any-return]


def test_a_delivery_lost_in_transit_is_read_later(nats: NatsServer, tmp_path: Path) -> None:
    first = traced(nats, tmp_path, 100)
    assert collect_drain(nats)["events"] == first  # the durable consumer exists now
    second = traced(nats, tmp_path, 20000)  # rows: messages of up to 8192 events

    async def lose_one(nc):  # type: ignore[no-untyped-def]
        psub = await nc.jetstream().pull_subscribe_bind("ringtool-collect", stream="RINGTOOL")
        msgs = await psub.fetch(1, timeout=10)
        assert len(msgs) == 1  # delivered, never acknowledged: then the connection ends

    nats.run(lose_one)
    host = collect_drain(nats)
    assert host["events"] - host["duplicates"] == second, host  # before: one message short
    assert host["duplicates"] == 0 and host["gaps"] == 0, host
