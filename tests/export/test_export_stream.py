"""``ringtool export-stream``: the admin of docs/fleet.md's broker creates the stream
with ringtool itself (no ``nats`` CLI), exactly as the guide shows it; hosts with no
JetStream API right then export; a stream there is checked, and given ``deny_purge``
and ``deny_delete`` when it lacks them. Against a real nats-server."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import nats

from ringtool.event.decode import Decoder
from ringtool.event.layout import load_layout
from ringtool.export.accounting import ExportCounters
from ringtool.export.config import ExportConfig
from ringtool.export.publisher import Publisher
from ringtool.export.wire import Encoder, Origin
from tests.helpers.cluster import nats_cluster
from tests.helpers.collect import fleet_stream_config
from tests.helpers.fleet_broker import (
    as_user,
    export_stream,
    export_stream_stderr,
    fleet_broker,
    url,
)
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer, nats_server


def raw_config(server: NatsServer, user: str = "admin") -> dict[str, Any]:
    """The stream's configuration as JetStream's STREAM.INFO answers it."""

    async def info(nc: Any) -> dict[str, Any]:
        reply = await nc.request("$JS.API.STREAM.INFO.RINGTOOL", b"", timeout=5)
        return dict(json.loads(reply.data)["config"])

    return dict(as_user(server, user, info)[0])


def host_start(server: NatsServer, host: str) -> str | None:
    """A host's exporter start (its stream check) as ``host``'s user: None or the error."""
    origin = Origin(host, "boot1", "run1", "trace", 0)
    encoder = Encoder(origin, "json", "ringtool", Decoder(load_layout()))
    pub = Publisher(ExportConfig(url=url(server, host), host=host), encoder,
                    ExportCounters(1), lambda _: None)  # fmt: skip
    try:
        return pub.start()
    finally:
        pub.close()


def test_the_admin_makes_the_stream_the_guide_shows_and_hosts_start(tmp_path: Path) -> None:
    with fleet_broker(tmp_path, stream=False) as server:
        error = host_start(server, "web1")  # before: one line naming the command
        assert error is not None and "ringtool export-stream" in error, error
        made = export_stream(server, "admin")
        assert made.returncode == 0 and made.stderr == export_stream_stderr(server), made
        assert made.stdout.startswith("ringtool export-stream: created stream RINGTOOL: ")
        want = json.loads(fleet_stream_config())  # docs/fleet.md's block
        got = raw_config(server)
        assert {k: got.get(k) for k in want} == want, got
        assert host_start(server, "web1") is None
        assert host_start(server, "web2") is None
        again = export_stream(server, "admin")  # a second run checks, changes nothing
        assert again.returncode == 0, again
        assert again.stdout.startswith("ringtool export-stream: stream RINGTOOL is ready: ")
        assert raw_config(server) == got


def test_a_stream_without_the_deny_flags_gets_them(nats: NatsServer) -> None:
    """A stream an exporter created (it lacks deny_purge and deny_delete) is given
    them; its limits stay; then purge is refused."""
    plain = f"nats://127.0.0.1:{nats.port}"

    async def create(nc: Any) -> None:
        body = {"name": "RINGTOOL", "subjects": ["ringtool.>"], "max_msgs": 1000}
        reply = await nc.request("$JS.API.STREAM.CREATE.RINGTOOL", json.dumps(body).encode(),
                                 timeout=5)  # fmt: skip
        assert "error" not in json.loads(reply.data), reply.data

    async def purge(nc: Any) -> dict[str, Any]:
        reply = await nc.request("$JS.API.STREAM.PURGE.RINGTOOL", b"", timeout=5)
        return dict(json.loads(reply.data))

    async def config(nc: Any) -> dict[str, Any]:
        reply = await nc.request("$JS.API.STREAM.INFO.RINGTOOL", b"", timeout=5)
        return dict(json.loads(reply.data)["config"])

    async def web1_after_purge_by_reply(nc: Any) -> int:
        """web1's five events, then web2's whose reply subject is the stream's purge (the
        stream's acknowledgement asks it): how many of web1's are left."""
        for _ in range(5):
            await nc.request("ringtool.web1.open", b"x", timeout=5)
        await nc.publish("ringtool.web2.open", b"y", reply="$JS.API.STREAM.PURGE.RINGTOOL")
        await nc.flush()
        await asyncio.sleep(1.0)
        body = json.dumps({"subjects_filter": "ringtool.web1.>"}).encode()
        info = json.loads((await nc.request("$JS.API.STREAM.INFO.RINGTOOL", body, timeout=5)).data)
        return sum((info["state"].get("subjects") or {}).values())

    run = _plain(nats)
    run(create)
    assert "error" not in run(purge)
    assert run(web1_after_purge_by_reply) == 0  # why the flags: docs/fleet.md
    done = _export_stream_url(plain)
    assert done.returncode == 0, done
    assert "now refuses purge and message delete" in done.stdout, done.stdout
    cfg = run(config)
    assert cfg["deny_purge"] and cfg["deny_delete"] and cfg["max_msgs"] == 1000, cfg
    assert "error" in run(purge)
    assert run(web1_after_purge_by_reply) == 5


def test_what_cannot_be_done_is_one_line(tmp_path: Path) -> None:
    with fleet_broker(tmp_path) as server:
        host = export_stream(server, "web1")  # no $JS.API right
        assert host.returncode == 1 and host.stdout == "", host
        assert host.stderr.startswith("ringtool export-stream: stream RINGTOOL: no answer from "
                                      "JetStream"), host.stderr  # fmt: skip
        assert host.stderr.count("\n") == 1
        other = export_stream(server, "admin", "--subject-prefix", "other")
        assert other.returncode == 1 and "takes ringtool.>, not other.>" in other.stderr, other
    with nats_server(tmp_path / "gone") as gone:
        port = gone.port
    down = _export_stream_url(f"nats://127.0.0.1:{port}")
    assert down.returncode == 1 and "Traceback" not in down.stderr, down
    assert down.stderr.count("\n") == 1, down.stderr
    bad = _export_stream_url("nats://127.0.0.1:1", "--max-age", "-1")
    assert bad.returncode == 2 and "--max-age" in bad.stderr, bad


def _plain(server: NatsServer) -> Any:
    """``run(fn)``: ``fn(nc)`` on a connection without a user (the plain server)."""

    def run(fn: Any) -> Any:
        async def main() -> Any:
            nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
            try:
                return await fn(nc)
            finally:
                await nc.close()

        return asyncio.run(main())

    return run


def _export_stream_url(broker: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*RINGTOOL, "export-stream", broker, *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_a_cluster_gets_three_replicas(tmp_path: Path) -> None:
    """Given a three-node cluster's URL, the stream is made with three replicas (as
    ``trace --export`` would), every one of them current."""
    with nats_cluster(tmp_path / "cluster") as cluster:
        done = _export_stream_url(cluster.url)
        assert done.returncode == 0 and "3 replica(s)" in done.stdout, done
        cluster.wait_current()
        replicas = cluster.stream_cluster().replicas or []
        assert len(replicas) == 2, replicas  # the leader and two others
