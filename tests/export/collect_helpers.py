"""Shared by the collect tests: messages as a stream delivers them, and a collector
fed by hand (no broker: the pure tests), plus the README's broker configuration."""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ringtool.export.collect_view import JsonView, MergedView, TableView
from ringtool.export.collector import CollectConfig, Collector
from ringtool.export.format import (
    H_BOOT,
    H_CLOCK,
    H_CPU,
    H_FORMAT,
    H_HOST,
    H_RUN,
    H_SEQ,
    H_SOURCE,
    H_TYPE,
    JSONL,
    STATS,
)

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Msg:
    """What the collector reads of a fetched message: subject, headers, body."""

    subject: str
    headers: dict[str, str] | None
    data: bytes


def headers(host: str = "web1", kind: str = "open", first: int = 1, count: int = 1,
            fmt: str = JSONL, **extra: str) -> dict[str, str]:  # fmt: skip
    """The headers ringtool's exporter writes on a message of ``host``."""
    h = {H_FORMAT: fmt, H_HOST: host, H_BOOT: "boot1", H_RUN: "run1", H_SOURCE: "trace",
         H_TYPE: kind}  # fmt: skip
    if fmt != STATS:
        h.update({H_CPU: "0", H_SEQ: f"{first}-{first + count - 1}", H_CLOCK: "0"})
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
    return Msg(f"ringtool.{host}.stats", headers(host, "stats", fmt=STATS, **extra), raw)


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
    """``line`` as JSON, refusing NaN/Infinity and duplicate keys (what a strict reader
    such as ``jq`` or a JSON schema validator would refuse)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in items]
        assert len(keys) == len(set(keys)), f"duplicate key in {line[:200]}"
        return dict(items)

    def constant(name: str) -> None:
        raise AssertionError(f"{name} in {line[:200]}")

    return json.loads(line, object_pairs_hook=pairs, parse_constant=constant)


def readme_conf() -> str:
    """The nats-server configuration block of README "Tracing a fleet"."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("### One user per host") :]
    m = re.search(r"```conf\n(.*?)```", section, re.S)
    assert m is not None, "README: no ```conf block under 'One user per host'"
    return m.group(1)


#: The users of that block (user: password), as the tests use them.
README_USERS = {"admin": "admin-secret", "web1": "web1-secret", "web2": "web2-secret",
                "collector": "collector-secret"}  # fmt: skip
