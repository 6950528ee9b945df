"""A real three-node NATS JetStream cluster on 127.0.0.1, for the export tests.

Each node is a :class:`~tests.helpers.servers.NatsServer` (Debian's ``nats-server``, its
own free client port and store directory) started with the cluster flags: a server
name, the cluster name, its route listener and the routes to all three (``--routes``;
a node's route to itself is ignored), and a monitoring port (``/connz``: which node a
client is connected to). JetStream in a cluster needs a meta leader
before it answers: :func:`nats_cluster` waits for one (bounded) and, whatever happens,
kills every node and removes the directory when it ends.

A node killed with SIGKILL and started again keeps its ports and store: it rejoins
and catches up from the others (a stream of three replicas keeps its quorum with two).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.helpers.servers import NatsServer, free_port

START_TIMEOUT_S = 60.0


class NatsCluster:
    """``size`` nodes named ``n0``.. in ``workdir/n<i>``; see the module doc."""

    def __init__(self, workdir: Path, size: int = 3) -> None:
        self.workdir = workdir
        self.nodes: list[NatsServer] = []
        cluster_ports = [free_port() for _ in range(size)]
        self.monitor_ports = [free_port() for _ in range(size)]
        routes = ",".join(f"nats://127.0.0.1:{p}" for p in cluster_ports)
        try:
            for i, port in enumerate(cluster_ports):
                flags = ("--server_name", f"n{i}", "--cluster_name", "ringtool-test",
                         "--cluster", f"nats://127.0.0.1:{port}", "--routes", routes,
                         "-m", str(self.monitor_ports[i]))  # fmt: skip
                self.nodes.append(NatsServer(workdir / f"n{i}", extra=flags))
            self.wait_jetstream()
        except BaseException:  # the nodes already started must not outlive the failure
            self.stop()
            raise

    @property
    def url(self) -> str:
        """All nodes, comma-separated: what ``--export`` and ``collect`` take."""
        return ",".join(n.url for n in self.nodes)

    def leader(self, stream: str = "RINGTOOL") -> NatsServer:
        """The stream's leader once every replica is current (to read the stream)."""
        self.wait_current(stream)
        return self.nodes[self.index(self.stream_cluster(stream).leader)]

    def up(self) -> NatsServer:
        """A node that runs (to look at the stream through)."""
        return next(n for n in self.nodes if n.proc is not None)

    def index(self, server_name: str) -> int:
        return int(server_name.removeprefix("n"))

    def wait_jetstream(self, timeout: float = START_TIMEOUT_S) -> None:
        """Until the cluster places a stream on all its nodes (a meta leader is elected
        and knows every peer): a probe stream is created and deleted; AssertionError
        with the nodes' log tails after ``timeout``."""
        deadline = time.monotonic() + timeout
        while not _places(self.up(), len(self.nodes)):
            if time.monotonic() > deadline:
                raise AssertionError(f"JetStream cluster not ready:\n{self.log_tails()}")
            time.sleep(0.2)

    def stream_cluster(self, stream: str = "RINGTOOL") -> Any:
        """The stream's ``cluster`` info (leader, replicas with ``current``/``offline``),
        asked through a running node."""
        return self.up().stream_info(stream).cluster

    def consumer_info(self, durable: str, stream: str = "RINGTOOL") -> Any:
        """The durable consumer ``durable``'s info, asked through a running node."""

        async def info(nc: Any) -> Any:
            return await nc.jetstream().consumer_info(stream, durable)

        return self.up().run(info)

    def consumer_leader(self, durable: str, stream: str = "RINGTOOL") -> int:
        """The node leading the durable consumer ``durable`` (its acknowledgements)."""
        return self.index(self.consumer_info(durable, stream).cluster.leader)

    def wait_current(self, stream: str = "RINGTOOL", timeout: float = START_TIMEOUT_S) -> None:
        """Until the stream has a leader and every replica is online and current (a
        restarted node caught up)."""
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):
                c = self.stream_cluster(stream)
                peers = c.replicas or []
                if (
                    c.leader
                    and len(peers) == len(self.nodes) - 1
                    and all(p.current and not p.offline for p in peers)
                ):
                    return
            if time.monotonic() > deadline:
                raise AssertionError(f"stream {stream} replicas not current:\n{self.log_tails()}")
            time.sleep(0.2)

    def serving(self, client: str, timeout: float = 30.0) -> int:
        """The node a client named ``client`` is connected to (the node's monitoring
        endpoint ``/connz`` lists it)."""
        deadline = time.monotonic() + timeout
        while True:
            for i, node in enumerate(self.nodes):
                if node.proc is None:
                    continue
                with contextlib.suppress(OSError, ValueError):
                    url = f"http://127.0.0.1:{self.monitor_ports[i]}/connz"
                    with urllib.request.urlopen(url, timeout=5) as resp:
                        conns = json.load(resp).get("connections") or []
                    if any(c.get("name") == client for c in conns):
                        return i
            if time.monotonic() > deadline:
                raise AssertionError(f"no node serves a client named {client!r}")
            time.sleep(0.2)

    def make_leader(self, i: int, stream: str = "RINGTOOL", tries: int = 20) -> None:
        """Ask the stream's leader to step down until node ``i`` leads it (the next
        leader is elected at random among the replicas)."""

        async def step_down(nc: Any) -> None:
            await nc.request(f"$JS.API.STREAM.LEADER.STEPDOWN.{stream}", b"", timeout=5)

        for _ in range(tries):
            self.wait_current(stream)
            if self.index(self.stream_cluster(stream).leader) == i:
                return
            with contextlib.suppress(Exception):  # no answer while it steps down: ask again
                self.up().run(step_down)
        raise AssertionError(f"node n{i} did not become the leader of {stream}")

    def make_consumer_leader_other_than(self, i: int, durable: str, stream: str = "RINGTOOL",
                                        tries: int = 20) -> None:  # fmt: skip
        """Ask the durable consumer's leader to step down until a node other than ``i``
        leads it."""

        async def step_down(nc: Any) -> None:
            await nc.request(f"$JS.API.CONSUMER.LEADER.STEPDOWN.{stream}.{durable}", b"",
                             timeout=5)  # fmt: skip

        for _ in range(tries):
            with contextlib.suppress(Exception):  # no leader while it steps down: ask again
                if self.consumer_leader(durable, stream) != i:
                    return
                self.up().run(step_down)
            time.sleep(0.2)
        raise AssertionError(f"node n{i} still leads the consumer {durable}")

    def kill(self, i: int) -> None:
        """kill -9 node ``i`` (no goodbye to clients or peers)."""
        self.nodes[i].stop(signal.SIGKILL)

    def restart(self, i: int) -> None:
        self.nodes[i].start()

    def log_tails(self, lines: int = 15) -> str:
        out = []
        for node in self.nodes:
            text = node._log_text().splitlines()[-lines:]
            out.append(f"--- {node.store.name} (port {node.port})\n" + "\n".join(text))
        return "\n".join(out)

    def stop(self) -> None:
        for node in self.nodes:
            with contextlib.suppress(Exception):
                node.stop(signal.SIGKILL)


def _places(node: NatsServer, replicas: int) -> bool:
    async def probe(nc: Any) -> bool:
        from nats.js.api import StreamConfig

        js = nc.jetstream()
        cfg = StreamConfig(name="PROBE", subjects=["probe.cluster"], num_replicas=replicas)
        await asyncio.wait_for(js.add_stream(cfg), 5)
        await asyncio.wait_for(js.delete_stream("PROBE"), 5)
        return True

    try:
        return bool(node.run(probe))
    except Exception:
        return False


@contextlib.contextmanager
def nats_cluster(workdir: Path, size: int = 3) -> Iterator[NatsCluster]:
    """A started cluster; its processes killed and ``workdir`` removed at the end,
    also when starting it failed."""
    cluster: NatsCluster | None = None
    try:
        cluster = NatsCluster(workdir, size)
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(workdir, ignore_errors=True)
