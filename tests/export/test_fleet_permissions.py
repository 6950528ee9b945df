"""docs/fleet.md's broker configuration, run as it is written (the block parsed out of
the guide), against a host that tries every JetStream API on the shared stream: by
direct request and as the reply subject of its own publishes (the stream sends its
acknowledgement ``{"stream": "RINGTOOL", "seq": N}`` to the reply subject, which the
JetStream API would read as a request). Nothing of web1's is lost or shown to web2, the
collector's consumer stays, and web2's own export still works."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ringtool.bench.local_server import fixed_nats_binary, nats_binary
from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.export.accounting import ExportCounters
from ringtool.export.batcher import Batcher
from ringtool.export.config import ExportConfig
from ringtool.export.publisher import Publisher
from ringtool.export.stream_setup import purge_exposed
from ringtool.export.wire import Encoder, Lines, Origin
from tests.helpers.collect import events
from tests.helpers.fleet_broker import (
    as_user,
    collect,
    export_stream,
    fleet_broker,
    publish,
    server_version,
    stream_messages,
    url,
)
from tests.helpers.servers import NatsServer

#: The servers the guide's configuration is checked on: Debian 12's (the PATH's
#: 2.9.10) and Debian 13's (2.10.27, which ``make setup`` unpacks into the venv).
SERVERS = {"debian12": nats_binary, "debian13": fixed_nats_binary}


@pytest.fixture(params=sorted(SERVERS))
def broker(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[NatsServer]:
    """docs/fleet.md's broker (:func:`tests.helpers.fleet_broker.fleet_broker`) on each
    Debian release's nats-server."""
    binary = SERVERS[request.param]()
    assert binary is not None, f"no {request.param} nats-server: run `make setup`"
    with fleet_broker(tmp_path, binary=binary) as server:
        yield server


#: What web2 asks for (subject, request body): purge, message delete, stream delete,
#: consumers on others' subjects, stream info with a subjects filter (every host's
#: subjects and counts), a message get, the collector's consumer deleted.
ATTACKS = [
    ("$JS.API.STREAM.PURGE.RINGTOOL", b""),
    ("$JS.API.STREAM.PURGE.RINGTOOL", b'{"filter": "ringtool.web1.>"}'),
    ("$JS.API.STREAM.MSG.DELETE.RINGTOOL", b'{"seq": 1}'),
    ("$JS.API.STREAM.DELETE.RINGTOOL", b""),
    ("$JS.API.CONSUMER.CREATE.RINGTOOL", json.dumps({"stream_name": "RINGTOOL", "config": {
        "deliver_policy": "all", "ack_policy": "explicit", "filter_subject": "ringtool.web1.>",
        "deliver_subject": "_INBOX.host.web2.peek"}}).encode()),
    ("$JS.API.CONSUMER.DURABLE.CREATE.RINGTOOL.peek", json.dumps({"stream_name": "RINGTOOL",
        "config": {"durable_name": "peek", "ack_policy": "explicit",
                   "filter_subject": "ringtool.web1.>"}}).encode()),
    ("$JS.API.CONSUMER.CREATE.RINGTOOL.peek2.ringtool.web1.>", json.dumps({
        "stream_name": "RINGTOOL", "config": {"durable_name": "peek2", "ack_policy": "explicit",
                                              "filter_subject": "ringtool.web1.>"}}).encode()),
    ("$JS.API.STREAM.INFO.RINGTOOL", b'{"subjects_filter": ">"}'),
    ("$JS.API.STREAM.MSG.GET.RINGTOOL", b'{"seq": 1}'),
    ("$JS.API.CONSUMER.DELETE.RINGTOOL.ringtool-collect", b""),
    ("$JS.API.STREAM.UPDATE.RINGTOOL", json.dumps({"name": "RINGTOOL",
        "subjects": ["ringtool.>"], "max_msgs": 1}).encode()),
    # the collector's consumer: a pull request, its info, a leader change
    ("$JS.API.CONSUMER.MSG.NEXT.RINGTOOL.ringtool-collect", b'{"batch": 100}'),
    ("$JS.API.CONSUMER.INFO.RINGTOOL.ringtool-collect", b""),
    ("$JS.API.CONSUMER.LEADER.STEPDOWN.RINGTOOL.ringtool-collect", b""),
    ("$JS.API.CONSUMER.NAMES.RINGTOOL", b""),
    ("$JS.API.CONSUMER.LIST.RINGTOOL", b""),
    # the stream's messages, a copy of it, another stream, the account and the server
    ("$JS.API.DIRECT.GET.RINGTOOL", b'{"seq": 1}'),
    ("$JS.API.STREAM.SNAPSHOT.RINGTOOL", b'{"deliver_subject": "_INBOX.host.web2.snap"}'),
    ("$JS.API.STREAM.RESTORE.EVIL", b'{"config": {"name": "EVIL"}}'),
    ("$JS.API.STREAM.CREATE.EVIL", b'{"name": "EVIL", "subjects": ["ringtool.web1.>"]}'),
    ("$JS.API.STREAM.LEADER.STEPDOWN.RINGTOOL", b""),
    ("$JS.API.STREAM.NAMES", b""),
    ("$JS.API.STREAM.LIST", b""),
    ("$JS.API.INFO", b""),
    ("$JS.API.META.LEADER.STEPDOWN", b""),
    ("$JS.API.SERVER.REMOVE", b'{"peer": "x"}'),
    ("$KV.bucket.key", b"x"),
    ("$SYS.REQ.SERVER.PING", b""),
    ("$SYS.REQ.ACCOUNT.PING.CONNZ", b""),
]  # fmt: skip
#: What nats-server before 2.10.27 runs for any account (CVE-2025-30215): the stream's
#: acknowledgement sent there deletes every stream of the account ("$G": users without
#: an account block), or, for "/", the server's whole JetStream store.
ACCOUNT_PURGES = ["$JS.API.ACCOUNT.PURGE.$G", "$JS.API.ACCOUNT.PURGE./"]


def consumers(server: NatsServer) -> list[str]:
    async def names(nc: Any) -> list[str]:
        return sorted(c.name for c in await nc.jetstream().consumers_info("RINGTOOL"))

    return list(as_user(server, "admin", names)[0])


def web1_messages(server: NatsServer) -> int:
    """web1's messages in the stream (asked as the admin)."""

    async def count(nc: Any) -> int:
        info = await nc.jetstream().stream_info("RINGTOOL", subjects_filter="ringtool.web1.>")
        return int(sum((info.state.subjects or {}).values()))

    return int(as_user(server, "admin", count)[0])


def test_a_host_reaches_no_jetstream_api(broker: NatsServer) -> None:
    web1 = [events("web1", 1 + 10 * i, [1.0 + i] * 10) for i in range(60)]
    assert publish(broker, "web1", *web1) == []
    assert web1_messages(broker) == 60
    first, _ = collect(broker)
    assert first["per_host"]["web1"]["events"] == 600
    assert consumers(broker) == ["ringtool-collect"]
    before = stream_messages(broker)

    async def by_reply(nc: Any) -> None:  # the acknowledgement as the request
        for n, (subject, _) in enumerate(ATTACKS):
            msg = events("web2", n + 1, [1.0])
            await nc.publish(msg.subject, msg.data, reply=subject, headers=msg.headers)
        await nc.flush()
        await asyncio.sleep(1.0)

    as_user(broker, "web2", by_reply)
    # every publish stored web2's message and did nothing else
    assert web1_messages(broker) == 60
    assert stream_messages(broker) == before + len(ATTACKS)
    assert consumers(broker) == ["ringtool-collect"]

    async def direct(nc: Any) -> list[str]:
        answered: list[str] = []

        async def got(msg: Any) -> None:
            answered.append(f"inbox: {msg.data[:200]!r}")

        await nc.subscribe("_INBOX.host.web2.>", cb=got)
        for subject, body in ATTACKS:
            try:
                await nc.request(subject, body, timeout=0.5)
                answered.append(subject)
            except Exception:
                pass
        return answered

    answered, errors = as_user(broker, "web2", direct)
    assert answered == [], answered  # no API answered web2, nothing came to its inbox
    text = "\n".join(errors).lower()
    for subject, _ in ATTACKS:
        assert f'violation for publish to "{subject.lower()}' in text, (subject, errors)
    assert consumers(broker) == ["ringtool-collect"]
    assert publish(broker, "web1", events("web1", 601, [99.0])) == []
    again, _ = collect(broker)
    w1, w2 = again["per_host"]["web1"], again["per_host"]["web2"]
    assert (w1["events"], w2["events"], again["bad_messages"]) == (1, len(ATTACKS), 0), again
    assert web1_messages(broker) == 61  # all of web1's are there


def test_a_host_exports_with_no_jetstream_api(broker: NatsServer) -> None:
    """web2's exporter under the same rules: the stream check at start (a probe the
    stream answers without storing it) and every event acknowledged and stored."""
    origin = Origin("web2", "boot1", "run1", "trace", 0)
    encoder = Encoder(origin, "json", "ringtool", Decoder(load_layout()))
    batches = Batcher({}, 10).lines(0, "open", Lines(
        json.dumps({"type": "open", "ts": 1.0 + i, "cpu": 0}) for i in range(100)))  # fmt: skip
    counters = ExportCounters(1)
    notes: list[str] = []
    pub = Publisher(ExportConfig(url=url(broker, "web2"), host="web2"), encoder, counters,
                    notes.append)  # fmt: skip
    assert pub.start() is None, notes
    for batch in batches:
        pub.offer(batch)
    pub.close()
    snap = counters.snapshot()
    assert (snap["exported"], snap["export_dropped"]) == (100, 0), (snap, notes)
    assert stream_messages(broker) == len(batches)  # the probe stored nothing
    summary, _ = collect(broker)
    assert summary["bad_messages"] == 0, summary
    assert (summary["per_host"]["web2"]["events"], summary["per_host"]["web2"]["gaps"]) == (
        100, 0)  # fmt: skip


def test_an_acknowledgement_sent_to_another_hosts_subject(broker: NatsServer) -> None:
    """web2's reply subject ``ringtool.web1.open``: the stream stores its acknowledgement
    there (a message on web1's subject that web1 did not publish); it has no ringtool
    header, so collect refuses it and web1's events are counted as they are."""
    assert publish(broker, "web1", *[events("web1", 1 + 10 * i, [1.0 + i] * 10)
                                     for i in range(3)]) == []  # fmt: skip

    async def by_reply(nc: Any) -> None:
        msg = events("web2", 1, [1.0])
        await nc.publish(msg.subject, msg.data, reply="ringtool.web1.open", headers=msg.headers)
        await nc.flush()
        await asyncio.sleep(1.0)

    as_user(broker, "web2", by_reply)
    assert web1_messages(broker) == 4
    summary, err = collect(broker)
    assert summary["bad_reasons"] == {"missing header": 1}, summary
    assert "refused a message on ringtool.web1.open: missing header" in err, err
    w1 = summary["per_host"]["web1"]
    assert (w1["events"], w1["gaps"], w1["read_elsewhere"]) == (30, 0, 0), w1


@pytest.mark.parametrize("reply", ACCOUNT_PURGES)
def test_an_account_purge_by_reply_subject(broker: NatsServer, reply: str) -> None:
    """web2's reply subject ``$JS.API.ACCOUNT.PURGE.*``. On a server that runs it for
    any account, no permission keeps web2 from deleting the stream this way: the guide
    says so and ``export-stream`` warns (the server's version in the warning); on any
    other, web1's events stay."""
    version = server_version(broker)
    checked = export_stream(broker, "admin")
    assert checked.returncode == 0 and "is ready" in checked.stdout, checked
    assert publish(broker, "web1", *[events("web1", 1 + 10 * i, [1.0 + i] * 10)
                                     for i in range(6)]) == []  # fmt: skip

    async def by_reply(nc: Any) -> None:
        msg = events("web2", 1, [1.0])
        await nc.publish(msg.subject, msg.data, reply=reply, headers=msg.headers)
        await nc.flush()
        await asyncio.sleep(1.0)

    as_user(broker, "web2", by_reply)
    if purge_exposed(version):
        assert f"warning: nats-server {version} deletes every stream" in checked.stderr
        assert "CVE-2025-30215" in checked.stderr, checked.stderr
        assert not list(Path(broker.store, "js", "jetstream").glob("*/streams/RINGTOOL/*/*.blk"))
    else:
        assert checked.stderr == ""
        assert web1_messages(broker) == 6
