"""A real nats-server run with exactly docs/fleet.md's configuration block (one user
per host, the collector's own user), its stream made by the admin user as the guide
says (``ringtool export-stream``), and ways to act as each user of that block."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.helpers.collect import FLEET_USERS, Msg, fleet_conf
from tests.helpers.paths import RINGTOOL, ROOT
from tests.helpers.servers import NatsServer, nats_server


@contextlib.contextmanager
def fleet_broker(tmp_path: Path, *, stream: bool = True,
                 binary: Path | None = None) -> Iterator[NatsServer]:  # fmt: skip
    """nats-server (``binary``, else Debian's on the PATH) with docs/fleet.md's block;
    the stream made by its admin user with ``ringtool export-stream`` (``stream=False``:
    none)."""
    conf = tmp_path / "nats.conf"
    conf.write_text(fleet_conf())
    with nats_server(tmp_path / "nats", conf=conf, binary=binary) as server:
        if stream:
            made = export_stream(server, "admin")
            assert made.returncode == 0 and "created stream" in made.stdout, made
        yield server


def export_stream(server: NatsServer, user: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``ringtool export-stream ARGS`` as ``user``, finished."""
    return subprocess.run([*RINGTOOL, "export-stream", url(server, user), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip


def server_version(server: NatsServer) -> str:
    """The version of the nats-server binary ``server`` runs (``2.9.10``)."""
    out = subprocess.run([server.binary, "--version"], capture_output=True, text=True,
                         timeout=30).stdout  # fmt: skip
    return out.strip().rpartition("v")[2]


def export_stream_stderr(server: NatsServer) -> str:
    """What ``ringtool export-stream`` says on stderr when all is well: nothing, or on a
    server whose account purge answers any account the warning about it."""
    from ringtool.export.stream_setup import purge_warning

    warning = purge_warning(server_version(server), "RINGTOOL")
    return "" if warning is None else f"ringtool export-stream: warning: {warning}\n"


def url(server: NatsServer, user: str) -> str:
    return f"nats://{user}:{FLEET_USERS[user]}@127.0.0.1:{server.port}"


def as_user(server: NatsServer, user: str, fn: Any) -> tuple[Any, list[str]]:
    """``fn(nc)`` on a connection of ``user`` (reply subjects ``_INBOX.host.<user>``,
    as ringtool's exporter names them); its result and the errors the server sent."""

    async def main() -> tuple[Any, list[str]]:
        import nats

        errors: list[str] = []

        async def on_error(exc: BaseException) -> None:
            errors.append(str(exc))

        nc = await nats.connect(url(server, user), allow_reconnect=False, error_cb=on_error,
                                inbox_prefix=f"_INBOX.host.{user}")  # fmt: skip
        try:
            result = await fn(nc)
            await nc.flush()
            await asyncio.sleep(0.2)  # the server's -ERR for a refused publish
            return result, errors
        finally:
            await nc.close()

    return asyncio.run(main())


def publish(server: NatsServer, user: str, *msgs: Msg) -> list[str]:
    """Publish ``msgs`` as ``user`` and wait for the stream's acknowledgements."""

    async def send(nc: Any) -> None:
        js = nc.jetstream()
        for m in msgs:
            await js.publish(m.subject, m.data, headers=m.headers, timeout=5)

    return as_user(server, user, send)[1]


def collect_run(server: NatsServer, *args: str) -> subprocess.CompletedProcess[str]:
    """``ringtool collect ARGS`` as the collector user, finished."""
    return subprocess.run([*RINGTOOL, "collect", url(server, "collector"), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)  # fmt: skip


def collect(server: NatsServer, *args: str) -> tuple[dict[str, Any], str]:
    """``ringtool collect --json --drain`` as the collector user: its summary, stderr."""
    p = collect_run(server, "--json", "--drain", "--interval", "0.3", *args)
    assert p.returncode == 0, p.stderr
    assert "Traceback" not in p.stderr, p.stderr
    for line in p.stdout.splitlines():
        json.loads(line)
    return json.loads(p.stdout.splitlines()[-1]), p.stderr


def stream_messages(server: NatsServer) -> int:
    """Messages in the stream now (asked as the admin)."""

    async def count(nc: Any) -> int:
        return int((await nc.jetstream().stream_info("RINGTOOL")).state.messages)

    return int(as_user(server, "admin", count)[0])


__all__ = ["as_user", "collect", "collect_run", "export_stream", "export_stream_stderr",
           "fleet_broker", "publish", "server_version", "stream_messages", "url"]  # fmt: skip
