"""JetStream publish acknowledgements, read by ringtool itself.

A JetStream publish is a plain NATS publish with a reply subject; the stream answers
on it with a PubAck (``{"stream": ..., "seq": N, "duplicate": true?}``) or an error
(``{"error": {"code": 503, "err_code": 10077, "description": ...}}``), and the server
answers a status ``503`` header when nothing listens (no stream for the subject,
JetStream still starting). :class:`AckInbox` sends with one wildcard reply
subscription per connection and hands each answer to ``on_answer(token, answer)``.

(nats-py's ``publish_async`` cannot be used: its reply handler raises the error
instead of setting it on the future, so a refused message would wait forever.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: JetStream's "store failed" error (max bytes/messages with discard new, ...).
STORE_FAILED = 10077


@dataclass(frozen=True)
class Answer:
    """``ok``: stored (``duplicate``: it already was); ``refused``: never will be
    (``why``); ``retry``: not now (``why``), send it again later."""

    outcome: str
    duplicate: bool = False
    why: str = ""


def classify(data: bytes, headers: dict[str, str] | None) -> Answer:
    """The :class:`Answer` of one reply message."""
    if headers and headers.get("Status") == "503":
        return Answer("retry", why="no responders (no stream for the subject yet)")
    try:
        resp = json.loads(data)
    except ValueError:
        return Answer("retry", why="unreadable acknowledgement")
    if not isinstance(resp, dict):
        return Answer("retry", why="unreadable acknowledgement")
    err = resp.get("error")
    if err is None:
        return Answer("ok", duplicate=bool(resp.get("duplicate")))
    if not isinstance(err, dict):
        return Answer("retry", why=str(err))
    code, err_code = err.get("code"), err.get("err_code")
    why = str(err.get("description") or f"error {err_code}")
    if code == 503 and err_code != STORE_FAILED:
        return Answer("retry", why=why)  # JetStream not ready, leader lost, ...
    return Answer("refused", why=why)


class AckInbox:
    """Publishes with a reply token per message on one connection ``nc``."""

    def __init__(self, nc: Any, on_answer: Callable[[str, Answer], None]) -> None:
        self.nc = nc
        self.on_answer = on_answer
        self.prefix = ""
        self._sub: Any = None

    async def start(self) -> None:
        self.prefix = self.nc.new_inbox() + "."
        self._sub = await self.nc.subscribe(self.prefix + "*", cb=self._reply)

    async def _reply(self, msg: Any) -> None:
        token = msg.subject[len(self.prefix) :]
        self.on_answer(token, classify(msg.data, msg.headers))

    async def publish(self, token: str, subject: str, body: bytes, headers: dict[str, str]) -> None:
        """Send; the answer comes to ``on_answer(token, ...)`` (or never: the caller
        times out and resends)."""
        await self.nc.publish(subject, body, reply=self.prefix + token, headers=headers)


__all__ = ["STORE_FAILED", "AckInbox", "Answer", "classify"]
