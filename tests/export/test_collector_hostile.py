"""A hostile fleet member against a real nats-server run with exactly the configuration
of docs/fleet.md (one user per host, the collector's own user): poison
messages do not stop ``collect`` or its durable consumer, a host with its own
credentials cannot publish as another, read the stream, pre-empt another's
``Nats-Msg-Id`` or change another's accounting."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ringtool.export.wire import H_CLOCK, H_HOST, H_ID, Encoder, Lines, Origin
from tests.helpers.collect import FLEET_USERS, Msg, events, good_stats, headers, stats
from tests.helpers.fleet_broker import (
    as_user,
    collect,
    fleet_broker,
    publish,
    stream_messages,
    url,
)
from tests.helpers.servers import NatsServer


def raw_publish(server: NatsServer, user: str, subject: bytes, head: bytes, body: bytes) -> None:
    """One message with raw subject and header bytes (not UTF-8: the server takes them),
    over the NATS protocol itself."""
    with socket.create_connection(("127.0.0.1", server.port), 5) as s:
        s.recv(4096)  # INFO
        connect = {"user": user, "pass": FLEET_USERS[user], "headers": True,
                   "verbose": False, "pedantic": False}  # fmt: skip
        hdr = b"NATS/1.0\r\n" + head + b"\r\n\r\n"
        s.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\n"
                  + b"HPUB " + subject + f" {len(hdr)} {len(hdr) + len(body)}\r\n".encode()
                  + hdr + body + b"\r\nPING\r\n")  # fmt: skip
        got = b""
        while b"PONG" not in got and b"-ERR" not in got:
            got += s.recv(4096)
        assert b"-ERR" not in got, got


def test_poison_messages_are_refused_and_passed(broker: NatsServer) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    poison = [
        Msg("ringtool.web1.open", headers("web1"), b'{"type": "open", "ts": Infinity}\n'),
        Msg("ringtool.web1.open", headers("web1"), b'{"type": "open", "ts": 1e300}\n'),
        Msg("ringtool.web1.open", headers("web1"), deep + b"\n"),
        events("web1", 1, [1.0], **{H_CLOCK: str(10**30)}),
        Msg("ringtool.web1.open", headers("web1"), b"\xff\xfe\n"),
        Msg("ringtool.web1.open", None, b"no headers"),
        stats("web1", b'{"kind": "stats", "dropped": "many"}'),
        stats("web1", b'{"kind": "stats", "dropped": 1e400}'),
        stats("web1", b'{"kind": "stats", "dropped": null}'),
        stats("web1", deep),
        events("web1", 1, [1.0], **{H_HOST: "\x1b]0;owned\x07"}),
    ]
    assert publish(broker, "web1", *poison) == []
    raw_publish(broker, "web1", b"ringtool.web1.open", b"Ringtool-Host: \xff\xfe", b"x\n")
    # allowed by ringtool.web1.*: nats-py's read loop would end on it (nats_client.py)
    raw_publish(broker, "web1", b"ringtool.web1.\xff\xfe", b"Ringtool-Format: jsonl/1", b"x\n")
    good = events("web1", 1, [1.0, 2.0])
    assert publish(broker, "web1", good, stats("web1", good_stats("web1", exported=2))) == []

    summary, err = collect(broker)
    assert summary["bad_messages"] == len(poison) + 2, summary
    assert summary["bad_reasons"] == {"bad body": 4, "bad header": 2, "bad stats": 4,
                                      "missing header": 2, "bad subject": 1}, summary  # fmt: skip
    web1 = summary["per_host"]["web1"]
    assert web1["events"] == 2 and web1["exported"] == 2 and web1["gaps"] == 0
    notes = err.splitlines()
    assert len(notes) == 5 and all("refused a message" in n for n in notes), err
    assert all(n.isprintable() for n in notes), err
    # everything was acknowledged: the durable consumer is past the poison
    again, _ = collect(broker)
    assert again["messages"] == 0 and again["bad_messages"] == 0, again


def test_a_host_cannot_speak_for_another(broker: NatsServer) -> None:
    before = stream_messages(broker)

    async def trespass(nc: Any) -> list[str]:
        from nats.js.api import ConsumerConfig

        await nc.publish("ringtool.web1.open", b"x", headers=headers("web1"))
        await nc.publish("ringtool.web1.stats", b"{}", headers=headers("web1", "stats"))
        await nc.subscribe("ringtool.>")
        await nc.subscribe("_INBOX.host.web1.>")  # web1's acknowledgements
        out = []
        for what, call in [
            ("consumer", nc.jetstream().add_consumer("RINGTOOL", ConsumerConfig(
                durable_name="peek"), timeout=1)),
            ("get", nc.request("$JS.API.STREAM.MSG.GET.RINGTOOL", b'{"seq": 1}', timeout=1)),
            ("direct", nc.request("$JS.API.DIRECT.GET.RINGTOOL", b'{"seq": 1}', timeout=1)),
            ("purge", nc.request("$JS.API.STREAM.PURGE.RINGTOOL", b"", timeout=1)),
        ]:  # fmt: skip
            try:
                await call
                out.append(what)
            except Exception:
                pass
        return out

    allowed, errors = as_user(broker, "web2", trespass)
    assert allowed == [], allowed
    text = "\n".join(errors).lower()
    for subject in ("ringtool.web1.open", "ringtool.web1.stats", "ringtool.>",
                    "_inbox.host.web1.>", "$js.api.consumer", "$js.api.stream.msg.get",
                    "$js.api.direct.get", "$js.api.stream.purge"):  # fmt: skip
        assert f'violation for publish to "{subject}' in text or (
            f'violation for subscription to "{subject}' in text
        ), (subject, errors)
    assert stream_messages(broker) == before  # nothing of web2's reached web1's subjects

    # on its own subjects, web2 can only lie about web1: refused
    forged = events("web1", 1, [1.0])
    forged.subject = "ringtool.web2.open"
    forged_stats = stats("web2", good_stats("web1", exported=999_999_999), **{H_HOST: "web2"})
    forged_header = stats("web1", good_stats("web1", exported=999_999_999))
    forged_header.subject = "ringtool.web2.stats"
    far = events("web2", 50_000_000, [1.0])  # its own lane: its own gaps
    assert publish(broker, "web2", forged, forged_stats, forged_header, far) == []
    assert publish(broker, "web1", events("web1", 1, [1.0, 2.0, 3.0]),
                   stats("web1", good_stats("web1", exported=3))) == []  # fmt: skip

    summary, err = collect(broker)
    assert summary["bad_reasons"] == {"forged origin": 3}, summary
    web1, web2 = summary["per_host"]["web1"], summary["per_host"]["web2"]
    assert (web1["events"], web1["exported"], web1["gaps"]) == (3, 3, 0)
    assert (web2["events"], web2["gaps"]) == (1, 49_999_999)
    assert "forged origin" in err


def test_msg_ids_cannot_be_preempted(broker: NatsServer) -> None:
    """web2 knows web1's run id and the id scheme and publishes every id web1 would
    use first: web1's messages are still stored, none taken for a duplicate."""
    from ringtool.event.decode import Decoder
    from ringtool.event.layout import load_layout
    from ringtool.export.accounting import ExportCounters
    from ringtool.export.batcher import Batcher
    from ringtool.export.config import ExportConfig
    from ringtool.export.publisher import Publisher

    origin = Origin("web1", "boot1", "run1", "trace", 0)
    encoder = Encoder(origin, "json", "ringtool", Decoder(load_layout()))
    batches = Batcher({}, 10).lines(0, "open", Lines(
        json.dumps({"type": "open", "ts": 1.0 + i, "cpu": 0}) for i in range(100)))  # fmt: skip
    # what an attacker reading web1's earlier messages would predict: their ids, and
    # the readable scheme ids used to be
    guesses = {
        m.msg_id
        for b in batches
        for m in Encoder(
            Origin("web1", "boot1", "run1", "trace", 0), "json", "ringtool", encoder.decoder
        ).encode(b)
    }
    guesses |= {f"web1:run1:open:0:{b.first}" for b in batches}  # fmt: skip
    squat = [events("web2", i + 1, [1.0], **{H_ID: g}) for i, g in enumerate(sorted(guesses))]
    assert publish(broker, "web2", *squat) == []

    counters = ExportCounters(1)
    notes: list[str] = []
    cfg = ExportConfig(url=url(broker, "web1"), host="web1")
    pub = Publisher(cfg, encoder, counters, notes.append)
    assert pub.start() is None, notes
    for batch in batches:
        pub.offer(batch)
    pub.close()
    snap = counters.snapshot()
    assert (snap["exported"], snap["export_dropped"], snap["export_duplicates"]) == (100, 0, 0)

    summary, _ = collect(broker)
    web1 = summary["per_host"]["web1"]
    assert (web1["events"], web1["gaps"], web1["duplicates"]) == (100, 0, 0)
    assert summary["per_host"]["web2"]["events"] == len(squat)


def test_made_up_hosts_are_bounded(broker: NatsServer) -> None:
    # the admin user may publish anywhere: 300 host names, collect keeps 50
    assert publish(broker, "admin", *(events(f"h{i}", 1, [1.0]) for i in range(300))) == []
    summary, err = collect(broker, "--max-hosts", "50")
    assert summary["hosts"] == 50 and len(summary["per_host"]) == 50
    assert summary["bad_reasons"] == {"over a limit": 250}
    assert err.count("refused a message") == 1 and "more than 50 hosts" in err


@pytest.mark.kernel
@pytest.mark.host_only  # the export, not the kernel
def test_trace_exports_with_its_own_user(broker: NatsServer, tmp_path: Path) -> None:
    """``trace --export`` as web1 under docs/fleet.md's permissions: every event and the
    final summary reach the stream, and collect credits them to web1."""
    import signal

    from tests.helpers.trace import Trace

    comm = f"rtown{tmp_path.name[-8:]}"[:15]
    target = tmp_path / "hot"
    target.write_text("x")
    tr = Trace("--json", "-c", comm, "--events", "open", "--interval", "0.3",
               "--export", url(broker, "web1"), "--host-name", "web1")  # fmt: skip
    code = ("import ctypes, sys; ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0)\n"
            "for _ in range(500): open(sys.argv[2]).close()")  # fmt: skip
    subprocess.run([sys.executable, "-c", code, comm, str(target)], check=True, timeout=60)
    tr.signal(signal.SIGINT)
    out, err = tr.finish()
    summary = json.loads(out[-1])
    assert summary["export"]["exported"] == summary["events"] >= 500, err
    assert summary["export"]["export_dropped"] == 0

    got, _ = collect(broker)
    web1 = got["per_host"]["web1"]
    assert got["bad_messages"] == 0, got
    assert web1["events"] == web1["exported"] == summary["events"]
    assert web1["finished_runs"] == 1 and web1["gaps"] == 0


def test_a_host_cannot_create_the_stream(tmp_path: Path) -> None:
    """Without the stream, a host's user (no STREAM.CREATE right) gets one line saying
    to create it, not a timeout from deep inside."""
    from ringtool.event.decode import Decoder
    from ringtool.event.layout import load_layout
    from ringtool.export.accounting import ExportCounters
    from ringtool.export.config import ExportConfig
    from ringtool.export.publisher import Publisher

    with fleet_broker(tmp_path, stream=False) as server:
        origin = Origin("web1", "boot1", "run1", "trace", 0)
        encoder = Encoder(origin, "json", "ringtool", Decoder(load_layout()))
        pub = Publisher(ExportConfig(url=url(server, "web1"), host="web1"), encoder,
                        ExportCounters(1), lambda _: None)  # fmt: skip
        error = pub.start()
        pub.close()
    assert error is not None and "does not exist" in error and "create it" in error, error
