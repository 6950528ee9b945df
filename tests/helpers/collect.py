"""Shared by the collect tests: messages as a stream delivers them, and a collector
fed by hand (no broker: the pure tests), plus the broker configuration of docs/fleet.md."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from typing import Any

from ringtool.export import wire
from ringtool.export.collect_view import JsonView, MergedView, TableView
from ringtool.export.collector import CollectConfig, Collector
from tests.helpers.paths import ROOT

#: Every header a ringtool message may carry (what the property tests vary).
HEADER_NAMES = [wire.H_FORMAT, wire.H_HOST, wire.H_BOOT, wire.H_RUN, wire.H_SOURCE,
                wire.H_TYPE, wire.H_CPU, wire.H_SEQ, wire.H_CLOCK, wire.H_DATA_LEN]  # fmt: skip


@dataclass
class Msg:
    """What the collector reads of a fetched message: subject, headers, body."""

    subject: str
    headers: dict[str, str] | None
    data: bytes


def headers(host: str = "web1", kind: str = "open", first: int = 1, count: int = 1,
            fmt: str = wire.JSONL, **extra: str) -> dict[str, str]:  # fmt: skip
    """The headers ringtool's exporter writes on a message of ``host``."""
    h = {wire.H_FORMAT: fmt, wire.H_HOST: host, wire.H_BOOT: "boot1", wire.H_RUN: "run1",
         wire.H_SOURCE: "trace", wire.H_TYPE: kind}  # fmt: skip
    if fmt != wire.STATS:
        h.update({wire.H_CPU: "0", wire.H_SEQ: f"{first}-{first + count - 1}", wire.H_CLOCK: "0"})
    h.update(extra)
    return h


def events(host: str, first: int, ts: list[float], **extra: str) -> Msg:
    """A well-formed ``jsonl/1`` message of ``host`` on its own subject."""
    body = "".join(json.dumps({"type": "open", "ts": t, "cpu": 0}) + "\n" for t in ts)
    return Msg(f"ringtool.{host}.open", headers(host, "open", first, len(ts), **extra),
               body.encode())  # fmt: skip


def stats(host: str, body: Any, **extra: str) -> Msg:
    """A ``stats/1`` message of ``host``; ``body`` a JSON value or raw bytes."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Msg(f"ringtool.{host}.stats", headers(host, "stats", fmt=wire.STATS, **extra), raw)


def good_stats(host: str, **counts: int) -> dict[str, Any]:
    return {"kind": "stats", "host": host, "boot": "boot1", "run": "run1", "source": "trace",
            "events": 0, "dropped": 0, "lost": 0, "exported": 0, "export_dropped": 0,
            **counts}  # fmt: skip


class Fed:
    """A :class:`Collector` fed messages by hand, with the view of ``mode``
    (``json``, ``merged``, ``table``) writing to strings."""

    def __init__(self, mode: str = "json", max_hosts: int = 4096) -> None:
        self.out, self.err = io.StringIO(), io.StringIO()
        view: Any
        if mode == "merged":
            view = MergedView(self.out, 2000, err=self.err)
        elif mode == "table":
            view = TableView(self.out, "ringtool collect test")
        else:
            view = JsonView(self.out)
        cfg = CollectConfig(url="nats://127.0.0.1:4222", timestamps=mode == "merged",
                            max_hosts=max_hosts)  # fmt: skip
        self.collector = Collector(cfg, view)
        self.collector._note = self.err_note  # type: ignore[method-assign]
        self.notes: list[str] = []
        self.fleet = self.collector.fleet

    def err_note(self, text: str) -> None:
        self.notes.append(text)

    def take(self, *msgs: Msg) -> None:
        for m in msgs:
            self.collector._take(m)

    def close(self) -> list[str]:
        """The view's end (its tick and summary); the lines it wrote."""
        self.collector.view.tick(self.fleet)
        self.collector.view.close(self.fleet)
        return self.out.getvalue().splitlines()


def strict_json(line: str) -> Any:
    """``line`` as JSON, refusing NaN/Infinity (no JSON parser but Python's takes them)
    and an object with ``host`` twice."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        assert keys.count("host") <= 1, f"host twice in {line[:200]}"
        return dict(items)

    def constant(name: str) -> None:
        raise AssertionError(f"{name} in {line[:200]}")

    return json.loads(line, object_pairs_hook=pairs, parse_constant=constant)


def _fleet_block(kind: str) -> str:
    text = (ROOT / "docs" / "fleet.md").read_text()
    section = text[text.index("## One user per host") :]
    m = re.search(rf"```{kind}\n(.*?)```", section, re.S)
    assert m is not None, f"docs/fleet.md: no ```{kind} block under 'One user per host'"
    return m.group(1)


def fleet_conf() -> str:
    """The nats-server configuration block of docs/fleet.md ("One user per host")."""
    return _fleet_block("conf")


def fleet_stream_config() -> bytes:
    """The stream configuration (JSON) the admin creates the stream with in
    docs/fleet.md ("One user per host"), as written there."""
    text = _fleet_block("json")
    json.loads(text)
    return text.encode()


#: The users of that block (user: password), as the tests use them.
FLEET_USERS = {"admin": "admin-secret", "web1": "web1-secret", "web2": "web2-secret",
                "collector": "collector-secret"}  # fmt: skip
