"""A nats-py client that survives what a stream holds: subjects that are not UTF-8.

NATS subjects are bytes to the server: a member allowed ``ringtool.web1.*`` may
publish on ``ringtool.web1.<byte 0xff>``, and the stream stores it. nats-py decodes a
delivered message's subject as strict UTF-8 in its read loop; the
``UnicodeDecodeError`` ends the loop (the connection is lost), and since the message
is never acknowledged it comes again after every reconnect: one message would stop
``collect`` for good. :class:`TolerantClient` decodes such a subject (and reply) with
``backslashreplace`` instead (``ringtool.web1.\\xff``), so the message reaches the
collector, which refuses it as a ``bad subject`` and acknowledges it with its batch.

:func:`connect` also gives nats-py's logger a handler that drops its records: nats-py
logs an error that ends its read loop with a traceback, and ringtool says what went
wrong in one line itself (the lost connection).
"""

from __future__ import annotations

import logging
from typing import Any

from nats.aio.client import Client


def _text(raw: Any) -> Any:
    if isinstance(raw, bytes | bytearray):
        try:
            raw.decode()
        except UnicodeDecodeError:
            return bytes(raw).decode("utf-8", "backslashreplace").encode()
    return raw


class TolerantClient(Client):
    """nats-py's client; a subject or reply subject that is not UTF-8 is decoded with
    ``backslashreplace`` instead of ending the read loop (module doc)."""

    def _build_message(self, sid: int, subject: bytes, reply: bytes, *rest: Any) -> Any:
        return super()._build_message(sid, _text(subject), _text(reply), *rest)


async def connect(opts: dict[str, Any]) -> Client:
    """A connected :class:`TolerantClient` (``opts``: ``nats.connect``'s keywords)."""
    log = logging.getLogger("nats")
    if not any(isinstance(h, logging.NullHandler) for h in log.handlers):
        log.addHandler(logging.NullHandler())
        log.propagate = False
    nc = TolerantClient()
    await nc.connect(**opts)
    return nc


__all__ = ["TolerantClient", "connect"]
