"""Read back everything a stream holds and check it against a tracer's summary."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ringtool.event.layout import load_layout
from ringtool.export.reading import DecoderCache, decode
from tests.helpers.servers import NatsServer


@dataclass
class StreamContent:
    """Events by (host, run, cpu, type, seq) -> JSON line; ``duplicates`` counts a
    sequence number seen again; ``summaries`` the final stats records per host."""

    events: dict[tuple[str, str, int, str, int], str] = field(default_factory=dict)
    duplicates: int = 0
    summaries: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: int = 0

    def per_cpu(self, host: str) -> Counter[int]:
        return Counter(k[2] for k in self.events if k[0] == host)

    def count(self, host: str | None = None) -> int:
        return sum(1 for k in self.events if host is None or k[0] == host)

    def lines(self, host: str | None = None) -> list[str]:
        return [v for k, v in self.events.items() if host is None or k[0] == host]


def read_stream(server: NatsServer, stream: str = "RINGTOOL") -> StreamContent:
    cache = DecoderCache(load_layout())
    out = StreamContent()
    for msg in server.messages(stream):
        out.messages += 1
        rec = decode(msg.headers, msg.data, cache)
        if rec.stats is not None:
            if rec.stats.get("kind") == "summary":
                out.summaries[rec.host] = rec.stats
            continue
        for i, line in enumerate(rec.lines):
            key = (rec.host, rec.run, rec.cpu, rec.type, rec.first + i)
            if key in out.events:
                out.duplicates += 1
            out.events[key] = line
    return out


def check_invariant(summary: dict[str, Any], generated: int, content: StreamContent,
                    host: str) -> None:  # fmt: skip
    """generated = exported + export_dropped + dropped + lost, and the stream holds
    exactly the exported events (per CPU), none twice."""
    x = summary["export"]
    assert summary["events"] + summary["dropped"] + summary["lost"] == generated, summary
    assert x["exported"] + x["export_dropped"] == summary["events"], x
    assert x["exported"] + x["export_dropped"] + summary["dropped"] + summary["lost"] == generated
    assert x["export_pending"] == 0
    assert content.duplicates == 0
    reasons = x["export_dropped_by_reason"]
    # the stream may hold these: sent, acknowledged or not, never confirmed to the trace
    unconfirmed = reasons["unconfirmed"] + reasons.get("publisher_died", 0)
    held = content.per_cpu(host)
    for cpu, n in enumerate(x["exported_per_cpu"]):
        assert n <= held.get(cpu, 0) <= n + unconfirmed, (cpu, n, held)
    assert x["exported"] <= content.count(host) <= x["exported"] + unconfirmed


def event_lines(stdout: list[str]) -> list[str]:
    """The event lines of a ``trace --json`` run (not start/stats/note/summary)."""
    skip = {"start", "stats", "note", "summary"}
    return [line for line in stdout if line.strip() and json.loads(line)["type"] not in skip]
