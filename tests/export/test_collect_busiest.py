"""``collect``'s busiest connections and disks against a real nats-server (docs/fleet.md's
configuration): two hosts publish known ``tcp`` and ``disk`` events, encoded by the
exporter's own encoder (web1 ``rows/1``, web2 ``jsonl/1``), each as its own user; the
summary's top connections and disks are what the events add up to."""

from __future__ import annotations

from typing import Any

from ringtool.event.decode import Decoder
from ringtool.event.syscalls import syscall_namer
from ringtool.export.busiest import SUB, TOP
from ringtool.export.wire import Batch, Encoder, Origin
from tests.helpers.busy_records import (
    LAYOUT,
    Conn,
    Io,
    disk_records,
    tcp_records,
    top_by_bytes,
    true_p99,
)
from tests.helpers.collect import Msg
from tests.helpers.fleet_broker import collect, collect_run, publish
from tests.helpers.servers import NatsServer

OFFSET = 1_765_000_000 * 10**9
CONNS: dict[str, list[Conn]] = {
    "web1": [
        ("10.1.0.1", 40000 + i % 9, "10.9.0.9", 443, 1000 * i, 10 * i, 100 + i, b"curl")
        for i in range(40)
    ],
    "web2": [
        ("fd00::2", 8080, f"fd00::{i % 7 + 10:x}", 51000 + i % 7, i * i, 3 * i, 7, b"nginx")
        for i in range(30)
    ],
}
IOS: dict[str, list[Io]] = {
    "web1": [(8, 0, 4096 * (1 + i % 4), 50_000 + 997 * i) for i in range(300)],
    "web2": [(259, 0, 512, 20_000 + 13 * i) for i in range(120)] + [(7, 3, 1 << 20, 9_000_000)],
}
FORMATS = {"web1": "rows", "web2": "json"}


def messages(host: str) -> list[Msg]:
    enc = Encoder(Origin(host, "boot1", "run1", "trace", OFFSET), FORMATS[host], "ringtool",
                  Decoder(LAYOUT, syscall_namer(), realtime_offset_ns=OFFSET))  # fmt: skip
    out = []
    for kind, arr in (("tcp", tcp_records(CONNS[host])), ("disk", disk_records(IOS[host]))):
        for first in range(0, len(arr), 50):  # several messages: aggregated over batches
            part = arr[first : first + 50]
            batch = Batch(0, kind, first + 1, len(part), part, part.nbytes)
            out += [Msg(m.subject, m.headers, m.body) for m in enc.encode(batch)]
    return out


def want_disks(ios: list[Io]) -> dict[str, dict[str, Any]]:
    out = {}
    for dev in sorted({(a, b) for a, b, _, _ in ios}):
        mine = [io for io in ios if io[:2] == dev]
        out[f"{dev[0]}:{dev[1]}"] = {"requests": len(mine), "bytes": sum(io[2] for io in mine),
                                     "p99": true_p99([io[3] for io in mine])}  # fmt: skip
    return out


def test_busiest_connections_and_disks_per_host(broker: NatsServer) -> None:
    for host in CONNS:
        assert publish(broker, host, *messages(host)) == []
    summary, _ = collect(broker)
    assert summary["bad_messages"] == 0, summary["bad_reasons"]
    for host in CONNS:
        mine = summary["per_host"][host]
        want = top_by_bytes(CONNS[host], TOP)
        assert [{k: c[k] for k in want[0]} for c in mine["connections"]] == want, host
        assert all(c["comm"] == CONNS[host][0][7].decode() for c in mine["connections"])
        disks = {d["dev"]: d for d in mine["disks"]}
        for dev, w in want_disks(IOS[host]).items():
            d = disks.pop(dev)
            assert (d["requests"], d["bytes"]) == (w["requests"], w["bytes"]), (host, dev)
            assert w["p99"] / 1000 <= d["p99_us_all"] <= w["p99"] * (1 + 1 / SUB) / 1000 + 0.1
        assert not disks


def test_the_table_shows_them(broker: NatsServer) -> None:
    for host in CONNS:
        publish(broker, host, *messages(host))
    p = collect_run(broker, "--drain", "--interval", "0.3")
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
    last = p.stdout[p.stdout.rindex("-- busiest TCP connections") :]
    assert "10.9.0.9:443" in last and "[fd00::2]:8080" in last and "nginx" in last
    assert "-- disks" in last and "259:0" in last and "7:3" in last
