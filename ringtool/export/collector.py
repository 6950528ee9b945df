"""``ringtool collect``: read the stream of many hosts with a durable consumer.

:class:`Collector` binds to (or creates) a durable pull consumer on
``<prefix>.>`` of the stream, so a second run resumes where the first stopped: it
fetches messages in batches, decodes and checks them (:mod:`ringtool.export.intake`:
the subject names the host, headers and body must agree), feeds the
:class:`~ringtool.export.fleet.Fleet` and the view, and acknowledges each message
(ack policy *explicit*) after the view has taken it. A message that is refused
(malformed, forged, over a bound) is counted in ``bad_messages`` by reason and
acknowledged like any other, so no message can stop the durable consumer. So every
message is handed to the view at least once: one delivered but never received (a
fetch's answer lost with a dying broker node) comes again after the ack wait, where
ack policy *all* would have acknowledged it with a later one, unread. A message
delivered again within a run (its acknowledgement was lost) is recognised by its
stream sequence and not handed to the view twice; a collector stopped between taking
and acknowledging sees up to one batch again on the next run (counted as duplicates).
Once per interval it asks the consumer for its backlog (messages not yet delivered:
the consumer lag). Its info at bind and each delivery's consumer and stream sequences
go to :class:`~ringtool.export.deliveries.Deliveries`, so what another ``collect`` on
the same durable consumer read (before this one, or at the same time) is counted as
*read elsewhere*, not as gaps. A lost connection is said in one line on stderr; the collector
reconnects with backoff and binds the same durable consumer again, which resumes after
the last acknowledged message. A fetch JetStream answers with 503 (no responder: a
cluster's consumer without a leader for a while, as nats-server 2.10 answers after a
node died) is said once and asked again on the same connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ringtool.errors import BadMessageError, ExportError
from ringtool.event.layout import load_layout
from ringtool.event.safe_text import printable
from ringtool.event.syscalls import syscall_namer
from ringtool.export.config import (
    BACKOFF_MAX_S,
    BACKOFF_MIN_S,
    connect_options,
    connected_server,
    describe_error,
    display_url,
    inbox_prefix,
    quiet_callbacks,
    quiet_task_errors,
)
from ringtool.export.fleet import MAX_HOSTS, Fleet
from ringtool.export.intake import UNDECODABLE, Intake
from ringtool.export.reading import DecoderCache, Received

FETCH = 256


class _FetchConnectionLost(Exception):
    """The connection closed under the fetch loop."""


@dataclass(frozen=True)
class CollectConfig:
    """``url``/``creds``/``tls_ca`` as for the exporter; ``durable`` the consumer
    name; ``duration`` None: until Ctrl-C; ``drain``: stop once the backlog is read;
    ``timestamps``: the view needs every event's time (``--merged``); ``max_hosts``:
    hosts kept at most (more are refused: :class:`~ringtool.export.fleet.Fleet`)."""

    url: str
    stream: str = "RINGTOOL"
    subject_prefix: str = "ringtool"
    durable: str = "ringtool-collect"
    creds: Path | None = None
    tls_ca: Path | None = None
    interval: float = 1.0
    duration: float | None = None
    drain: bool = False
    timestamps: bool = False
    max_hosts: int = MAX_HOSTS


class CollectView(Protocol):
    """What the collector drives: the fleet table, JSON lines or the merged events."""

    def message(self, rec: Received) -> None: ...
    def tick(self, fleet: Fleet) -> None: ...
    def close(self, fleet: Fleet) -> None: ...


class Collector:
    """See the module doc. ``stop()`` may be called from a signal handler."""

    def __init__(self, cfg: CollectConfig, view: CollectView) -> None:
        self.cfg = cfg
        self.view = view
        layout = load_layout()
        self.fleet = Fleet(cfg.max_hosts, layout)
        self.decoders = DecoderCache(layout, syscall_namer())
        self.intake = Intake(cfg.subject_prefix, self.decoders, cfg.timestamps)
        self._stop = False
        self._done = False
        self._connected = False
        self._errors: list[BaseException] = []
        self._end: float | None = None
        self._next_tick = 0.0

    def stop(self) -> None:
        self._stop = True

    def run(self) -> int:
        try:
            asyncio.run(self._main())
        finally:
            if self._connected:
                self.view.close(self.fleet)
        return 0

    def _over(self) -> bool:
        return self._stop or self._done or (self._end is not None and time.monotonic() >= self._end)

    async def _main(self) -> None:
        """Connect, read until done; a lost connection is said in one line and the
        durable consumer is bound again once the broker answers (backoff 0.1–5 s). Only
        the first connection's failure is an error."""
        from ringtool.export.nats_client import connect

        asyncio.get_running_loop().set_exception_handler(quiet_task_errors(self._errors))
        opts = connect_options(self.cfg.url, self.cfg.creds, self.cfg.tls_ca, 2.0,
                               inbox_prefix("collect", self.cfg.durable))  # fmt: skip
        opts.update(quiet_callbacks(self._errors), name="ringtool-collect")
        url = display_url(self.cfg.url)
        start = time.monotonic()
        self._end = None if self.cfg.duration is None else start + self.cfg.duration
        self._next_tick = start + self.cfg.interval
        backoff, down_since = BACKOFF_MIN_S, None
        while not self._over():
            try:
                nc = await connect(opts)
            except Exception as exc:
                cause = self._errors[-1] if self._errors else exc
                self._errors.clear()
                if not self._connected:
                    raise ExportError(f"{url}: {describe_error(cause)}") from None
                await self._pause(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            try:
                psub = await self._bind(nc, first=not self._connected)
                if down_since is not None:
                    self._note(f"connected to {connected_server(nc, url)} again after "
                               f"{time.monotonic() - down_since:.1f} s")  # fmt: skip
                self._connected, backoff, down_since = True, BACKOFF_MIN_S, None
                await self._loop(nc, psub)
            except _FetchConnectionLost:
                if down_since is None:
                    down_since = time.monotonic()
                    self._note(f"lost the connection to {url}; reconnecting with backoff "
                               "(the durable consumer resumes where it was)")  # fmt: skip
                await self._pause(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
            finally:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(nc.flush(timeout=2), 3)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(nc.close(), 3)

    def _note(self, text: str) -> None:
        print(f"ringtool collect: {text}", file=sys.stderr, flush=True)

    async def _pause(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while not self._over() and time.monotonic() < deadline:
            await asyncio.sleep(min(0.1, seconds))

    async def _bind(self, nc: Any, *, first: bool) -> Any:
        """The durable pull consumer; ExportError on the first connection (a missing
        stream is the user's to fix), :class:`_FetchConnectionLost` after a reconnect (JetStream may
        still be starting)."""
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

        config = ConsumerConfig(
            durable_name=self.cfg.durable, ack_policy=AckPolicy.EXPLICIT,
            deliver_policy=DeliverPolicy.ALL, ack_wait=30, max_ack_pending=-1,
            filter_subject=f"{self.cfg.subject_prefix}.>",
        )  # fmt: skip
        try:
            return await nc.jetstream().pull_subscribe(
                f"{self.cfg.subject_prefix}.>", durable=self.cfg.durable,
                stream=self.cfg.stream, config=config,
            )  # fmt: skip
        except Exception as exc:
            if first:
                raise ExportError(f"stream {self.cfg.stream}: {describe_error(exc)}") from None
            raise _FetchConnectionLost from exc

    async def _loop(self, nc: Any, psub: Any) -> None:
        """Fetch, hand to the view, acknowledge; :class:`_FetchConnectionLost` when the connection
        closes (messages not yet acknowledged come again: at least once)."""
        from nats.errors import TimeoutError as NatsTimeout
        from nats.js.errors import ServiceUnavailableError

        await self._backlog(psub, bind=True)
        unavailable = False
        while not self._over():
            wait, was_unavailable, unavailable = min(0.5, self.cfg.interval), unavailable, False
            try:
                msgs = await psub.fetch(FETCH, timeout=wait)
            except (TimeoutError, NatsTimeout):
                msgs = []
            except ServiceUnavailableError:  # 503: no responder for the consumer now
                if not was_unavailable:
                    self._note("JetStream has no responder for the consumer now (a "
                               "cluster electing its leader?); asking again")  # fmt: skip
                msgs, unavailable = [], True
                await self._pause(wait)
            except Exception as exc:
                if nc.is_closed or not nc.is_connected:
                    raise _FetchConnectionLost from exc
                raise
            for msg in msgs:
                at = self._first_delivery(msg)
                if at is not None:
                    self._take(msg, at)
            try:
                for msg in msgs:
                    await msg.ack()
            except Exception as exc:
                raise _FetchConnectionLost from exc
            if time.monotonic() >= self._next_tick or (not msgs and self.cfg.drain):
                await self._backlog(psub)
                self.fleet.tick()
                self.view.tick(self.fleet)
                self._next_tick = time.monotonic() + self.cfg.interval
                if self.cfg.drain and not msgs and not unavailable and self.fleet.pending == 0:
                    self._done = True
            if nc.is_closed:
                raise _FetchConnectionLost

    async def _backlog(self, psub: Any, *, bind: bool = False) -> None:
        """The consumer's backlog into ``fleet.pending`` (``bind``: and its last
        delivery into ``fleet.deliveries``, before the first fetch); ExportError when
        the stream or the durable consumer is gone (deleted by another client: fetches
        would time out for ever, silently)."""
        from nats.js.errors import NotFoundError

        try:
            info = await psub.consumer_info()
        except NotFoundError as exc:
            what = "stream" if "stream" in str(exc.description or "").lower() else "consumer"
            name = self.cfg.stream if what == "stream" else f"{self.cfg.durable!r}"
            raise ExportError(f"the {what} {name} no longer exists (deleted by another "
                              "client?); run again to bind it anew") from None  # fmt: skip
        except Exception:  # the backlog is a best-effort figure
            return
        self.fleet.pending = int(info.num_pending or 0) + int(info.num_ack_pending or 0)
        if bind and info.delivered is not None:
            delivered = info.delivered
            self.fleet.deliveries.bind(int(delivered.consumer_seq or 0),
                                       int(delivered.stream_seq or 0))  # fmt: skip

    def _first_delivery(self, msg: Any) -> int | None:
        """The message's stream sequence (0: not a JetStream delivery, nothing to
        recognise it by), or None for a message this run already handed to the view
        (delivered again: its acknowledgement was lost with a connection or a broker
        node)."""
        try:
            meta = msg.metadata
            cseq, sseq = int(meta.sequence.consumer), int(meta.sequence.stream)
            new = int(meta.num_delivered) <= 1
        except Exception:
            return 0
        return sseq if self.fleet.deliveries.take(cseq, sseq, new) else None

    def _take(self, msg: Any, at: int = 0) -> None:
        """One message, seen at stream sequence ``at``, into the fleet and the view,
        or counted as refused with its reason (the first of each reason said in one
        line). Never raises: whatever a message holds, the batch it came in is
        acknowledged and the consumer moves on."""
        subject = msg.subject if isinstance(msg.subject, str) else ""
        try:
            rec, ts = self.intake.take(subject, msg.headers, msg.data)
            self.fleet.add(rec, len(msg.data), ts, at)
        except BadMessageError as exc:
            self._refuse(subject, exc.reason, exc.detail)
            return
        except Exception as exc:  # a decoder bug: counted, said, never fatal
            self._refuse(subject, UNDECODABLE, f"{type(exc).__name__} while decoding")
            return
        self.view.message(rec)

    def _refuse(self, subject: str, reason: str, detail: str) -> None:
        if self.fleet.refuse(reason):
            self._note(f"refused a message on {printable(subject[:120])}: {reason} "
                       f"({printable(detail[:200])}); counted in bad_messages, further "
                       f"ones refused for {reason} are only counted")  # fmt: skip


__all__ = ["CollectConfig", "CollectView", "Collector"]
