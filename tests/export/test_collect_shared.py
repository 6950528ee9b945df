"""Two ``collect`` runs on one durable consumer, against a real nats-server: what one
read and acknowledged is *read elsewhere* for the other, not a gap, whether they run
one after the other or at the same time; events deleted from the stream are still
gaps, and so are those the stream's limits removed before any reader had them. The
exported events are known (published by the test, with the host's summary)."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from ringtool.export.wire import H_CPU
from tests.helpers.collect import Msg, events, good_stats, stats
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer

CPUS = 2


def lane_messages(first_msg: int, count: int, per_msg: int) -> list[Msg]:
    """Messages ``first_msg..first_msg+count-1`` of each CPU's lane of web1, ``per_msg``
    events each, CPU lanes interleaved as an exporter publishes them."""
    out = []
    for m in range(first_msg, first_msg + count):
        for cpu in range(CPUS):
            ts = [float(m * per_msg + i) for i in range(per_msg)]
            out.append(events("web1", 1 + (m - 1) * per_msg, ts, **{H_CPU: str(cpu)}))
    return out


def summary(exported: int) -> Msg:
    return stats("web1", {**good_stats("web1", exported=exported), "kind": "summary"})


def publish(server: NatsServer, msgs: list[Msg], max_msgs: int = -1) -> list[int]:
    """Publish ``msgs`` (the stream made first when missing, keeping at most
    ``max_msgs`` messages); their stream sequences."""

    async def send(nc: Any) -> list[int]:
        from nats.js.api import StreamConfig

        js = nc.jetstream()
        await js.add_stream(StreamConfig(name="RINGTOOL", subjects=["ringtool.>"],
                                         max_msgs=max_msgs))  # fmt: skip
        return [(await js.publish(m.subject, m.data, headers=m.headers, timeout=5)).seq
                for m in msgs]  # fmt: skip

    return list(server.run(send))


def delete(server: NatsServer, seqs: list[int]) -> None:
    async def remove(nc: Any) -> None:
        for seq in seqs:
            await nc.jetstream().delete_msg("RINGTOOL", seq)

    server.run(remove)


def start(server: NatsServer, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([*RINGTOOL, "collect", server.url, "--json", "--interval", "0.3",
                             "--durable", "shared", *args], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip


def result(p: subprocess.Popen[str]) -> dict[str, Any]:
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0 and "Traceback" not in err, err
    last = json.loads(out.splitlines()[-1])
    assert last["type"] == "summary" and last["bad_messages"] == 0, last
    host: dict[str, Any] = last["per_host"].get(
        "web1", {"events": 0, "gaps": 0, "read_elsewhere": 0, "exported": 0}
    )
    return host


def test_one_after_the_other(nats: NatsServer) -> None:
    total = 2 * 30 * CPUS * 10
    publish(nats, lane_messages(1, 30, 10))
    first = result(start(nats, "--drain"))
    assert (first["events"], first["gaps"]) == (total // 2, 0)
    publish(nats, [*lane_messages(31, 30, 10), summary(total)])
    second = result(start(nats, "--drain"))
    assert second["gaps"] == 0, second  # what the first read is not lost
    assert first["read_elsewhere"] == 0, first
    assert (second["events"], second["read_elsewhere"]) == (total // 2, total // 2), second
    assert second["events"] + second["read_elsewhere"] == second["exported"] == total


def test_at_the_same_time(nats: NatsServer) -> None:
    total = 600 * CPUS * 2
    publish(nats, [])  # the stream
    readers = [start(nats, "-d", "12"), start(nats, "-d", "12")]
    time.sleep(4)  # both bound to the consumer and fetching
    msgs = lane_messages(1, 600, 2)
    for i in range(0, len(msgs), 100):
        publish(nats, msgs[i : i + 100])
    publish(nats, [summary(total)])
    got = [result(p) for p in readers]
    assert [r["gaps"] for r in got] == [0, 0], got
    assert sum(r["events"] for r in got) == total, got  # each event read once, by one
    assert sum(r["exported"] for r in got) == total, got  # the summary went to one
    for r in got:
        if r["exported"]:
            assert r["events"] + r["read_elsewhere"] == total, r
        else:
            assert r["events"] + r["read_elsewhere"] <= total, r


def test_deleted_messages_are_still_gaps(nats: NatsServer) -> None:
    total = 2 * 30 * CPUS * 10
    publish(nats, lane_messages(1, 30, 10))
    result(start(nats, "--drain"))
    seqs = publish(nats, [*lane_messages(31, 30, 10), summary(total)])
    delete(nats, seqs[10:16])  # 3 messages of each lane, inside what the second reads
    second = result(start(nats, "--drain"))
    assert second["gaps"] == 6 * 10, second
    assert second["read_elsewhere"] == total // 2, second
    assert second["events"] + second["read_elsewhere"] + second["gaps"] == total, second


def test_messages_removed_before_any_reader_are_gaps(nats: NatsServer) -> None:
    """A first collector on a stream whose limit (``max_msgs``) removed its oldest
    messages: nobody read them, so they are gaps, not read elsewhere."""
    total = 30 * CPUS * 10
    publish(nats, [*lane_messages(1, 30, 10), summary(total)], max_msgs=21)
    first = result(start(nats, "--drain"))
    removed = (30 * CPUS + 1 - 21) * 10  # the 40 oldest messages, 10 events each
    assert (first["gaps"], first["read_elsewhere"]) == (removed, 0), first
    assert first["events"] + first["gaps"] == first["exported"] == total, first
