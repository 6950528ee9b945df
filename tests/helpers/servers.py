"""Real servers for the export tests: Debian's ``nats-server`` and ``prometheus``.

Each runs on 127.0.0.1 with a free port chosen at start and a temporary directory, and
is stopped by the fixture that started it. Nothing else on the network is touched.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ringtool.bench.local_server import LocalNats, free_port, wait_port

__all__ = ["NatsServer", "Prometheus", "free_port", "nats_server"]
PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"


class NatsServer(LocalNats):
    """:class:`ringtool.bench.local_server.LocalNats` plus ways to look at the stream."""

    @property
    def auth_url(self) -> str:
        return f"nats://{self.user}:{self.password}@127.0.0.1:{self.port}"

    # --- looking at the stream (a plain nats-py client, as any user would) --------------

    def run(self, coro_fn: Any) -> Any:
        async def main() -> Any:
            import nats

            kw = {"user": self.user, "password": self.password} if self.user else {}
            nc = await nats.connect(self.url, allow_reconnect=False, **kw)
            try:
                return await coro_fn(nc)
            finally:
                await nc.close()

        return asyncio.run(main())

    def messages(self, stream: str = "RINGTOOL", tries: int = 3) -> list[Any]:
        """Every message of ``stream`` (headers, data), read with an ephemeral
        ordered push consumer until the stream's last sequence. A read that stalls 10 s
        (in a cluster just after a node came back, the new consumer may get nothing
        for a while) is made again from the start, up to ``tries`` times: what is
        checked is the stream's content, which a read does not change."""
        from nats.errors import TimeoutError as NatsTimeout

        for _ in range(tries - 1):
            try:
                return self._messages(stream)
            except NatsTimeout:
                continue
        return self._messages(stream)

    def _messages(self, stream: str) -> list[Any]:

        async def read(nc: Any) -> list[Any]:
            js = nc.jetstream()
            info = await js.stream_info(stream)
            last = info.state.last_seq
            out: list[Any] = []
            if info.state.messages == 0:
                return out
            sub = await js.subscribe(f"{info.config.subjects[0]}", ordered_consumer=True,
                                     stream=stream)  # fmt: skip
            while True:
                msg = await sub.next_msg(timeout=10)
                out.append(msg)
                if msg.metadata.sequence.stream >= last:
                    break
            await sub.unsubscribe()
            return out

        return list(self.run(read))

    def stream_info(self, stream: str = "RINGTOOL") -> Any:
        async def info(nc: Any) -> Any:
            return await nc.jetstream().stream_info(stream)

        return self.run(info)


class Prometheus:
    """A Prometheus server scraping ``targets`` every second; data in a temp dir."""

    def __init__(self, workdir: Path, targets: list[str]) -> None:
        self.port = free_port()
        workdir.mkdir(parents=True, exist_ok=True)
        cfg = workdir / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: ringtool\n    static_configs:\n"
            f"      - targets: {json.dumps(targets)}\n"
        )
        self.log = (workdir / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={workdir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        wait_port(self.port)
        deadline = time.monotonic() + 60
        while not self._ready():
            assert self.proc.poll() is None, "prometheus exited"
            assert time.monotonic() < deadline, "prometheus not ready"
            time.sleep(0.1)

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def query(self, expr: str) -> list[dict[str, Any]]:
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": expr}
        )
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = json.load(resp)
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


@contextlib.contextmanager
def nats_server(store: Path, **kw: Any) -> Iterator[NatsServer]:
    server = NatsServer(store, **kw)
    try:
        yield server
    finally:
        server.stop()
