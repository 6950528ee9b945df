"""The JetStream publisher: nats-py in its own thread, with its own asyncio loop.

Contract with the drain (the thread that reads the rings):

* :meth:`Publisher.offer` never blocks: it puts a batch in the bounded queue
  (:mod:`ringtool.export.bounded_queue`) or counts its events as ``export_dropped``
  (``queue_full``), and returns at once. A slow or absent broker fills the queue,
  never the kernel rings.
* Every event handed over ends as ``exported`` (acknowledged by the stream) or
  ``export_dropped`` (:mod:`ringtool.export.accounting`) by the time :meth:`close`
  returns.

The thread connects (``allow_reconnect=False``: it reconnects itself, with
exponential backoff from 0.1 s to 5 s), creates the stream when missing, encodes
batches and keeps up to :data:`WINDOW` messages in flight (``publish_async``). A
message is kept, encoded, until the stream acknowledges it: after a lost connection or
an acknowledgement timeout it is sent again with the same ``Nats-Msg-Id``, and the
stream's duplicate window turns the resend of a message it already stored into a
``duplicate`` acknowledgement instead of a second copy. A message the stream refuses
(limits with ``discard: new``, too large) is dropped and counted (``refused``); a
temporary refusal (JetStream not ready after a restart, no responders while a cluster
elects a stream leader) is retried at the pump's next round. ``cfg.url`` may name a
cluster's servers: a connection goes to any that answers, and a stream that does not
answer yet after a reconnect (:class:`~ringtool.export.stream.StreamNotReady`) is
waited for with the same backoff as an unreachable broker.
Notes (one line each: connection lost, back, stream created) go to ``on_note``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ringtool.errors import ExportError
from ringtool.export.accounting import ExportCounters
from ringtool.export.acks import AckInbox, Answer
from ringtool.export.bounded_queue import BoundedQueue
from ringtool.export.config import (
    BACKOFF_MAX_S,
    BACKOFF_MIN_S,
    ExportConfig,
    connect_options,
    connected_server,
    describe_error,
    display_url,
    inbox_prefix,
    quiet_callbacks,
    quiet_task_errors,
)
from ringtool.export.ledger import Ledger
from ringtool.export.stream import StreamNotReady, ensure_stream
from ringtool.export.wire import Batch, Encoder, Message

#: Messages published and not yet acknowledged, at most.
WINDOW = 64
ACK_TIMEOUT_S = 5.0


class _PumpConnectionLost(Exception):
    """The connection closed under the pump."""


class Publisher:
    """Owns the export thread (see module doc)."""

    def __init__(
        self,
        cfg: ExportConfig,
        encoder: Encoder,
        counters: ExportCounters,
        on_note: Callable[[str], None],
    ) -> None:
        self.cfg = cfg
        self.encoder = encoder
        self.counters = counters
        self.on_note = on_note
        self.queue = BoundedQueue(cfg.queue_bytes, on_put=self._wake_soon)
        self.connected = False
        self._errors: list[BaseException] = []
        self._opts = connect_options(cfg.url, cfg.creds, cfg.tls_ca, cfg.connect_timeout_s,
                                     inbox_prefix("host", encoder.origin.host))  # fmt: skip
        self._opts.update(quiet_callbacks(self._errors))
        self._url = display_url(cfg.url)
        self._loop = asyncio.new_event_loop()
        self._wake: asyncio.Event | None = None
        self._stats: deque[Message] = deque(maxlen=1)
        self._final: Callable[[], Message] | None = None
        self._stop = False
        self._deadline = float("inf")
        self._first = threading.Event()
        self._first_error: str | None = None
        self.ledger = Ledger(counters)
        self._thread = threading.Thread(target=self._main, name="ringtool-export", daemon=True)

    # --- the drain's side ----------------------------------------------------------------

    def start(self) -> str | None:
        """Start the thread and wait for the first connection attempt; its error (one
        line) or None when connected. The thread keeps retrying either way."""
        self._thread.start()
        self._first.wait(self.cfg.connect_timeout_s + 5)
        if not self._first.is_set():
            return f"no answer from {self._url} within {self.cfg.connect_timeout_s + 5:.0f} s"
        return self._first_error

    def offer(self, batch: Batch) -> None:
        """Hand ``batch`` over, never blocking (see module doc)."""
        self.counters.hand(batch.cpu, batch.count)
        if not self.queue.put(batch):
            self.counters.drop(batch.cpu, batch.count, "queue_full")

    def offer_stats(self, msg: Message) -> None:
        """The latest stats message (an older one not yet sent is replaced)."""
        self._stats.append(msg)
        self._wake_soon()

    def close(self, final: Callable[[], Message] | None = None) -> None:
        """Drain for at most ``cfg.drain_s``, count what is left as dropped, publish
        ``final()`` (built after the counts are final) and stop the thread."""
        self._final = final
        self._deadline = time.monotonic() + self.cfg.drain_s
        self._stop = True
        self._wake_soon()
        self._thread.join(self.cfg.drain_s + 10)
        if self._thread.is_alive():  # pragma: no cover - nats-py hung: count, move on
            self._give_up()

    def _wake_soon(self) -> None:
        if self._wake is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self._loop.call_soon_threadsafe(self._wake.set)

    # --- the export thread ---------------------------------------------------------------

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.set_exception_handler(quiet_task_errors(self._errors))
        try:
            self._loop.run_until_complete(self._run())
        except Exception as exc:  # never a silent end: say why; what is left is counted
            self.on_note(f"export: stopped by an internal error ({type(exc).__name__}: "
                         f"{exc}); events not exported are counted as dropped")  # fmt: skip
        finally:
            self._give_up()
            self._first.set()
            self._end_tasks()
            self._loop.close()

    def _end_tasks(self) -> None:
        """Cancel what nats-py left running (a close cut short by a reset socket leaves
        its subscription tasks pending) and wait for them, at most 2 s."""
        tasks = asyncio.all_tasks(self._loop)
        if not tasks:
            return
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            self._loop.run_until_complete(asyncio.wait(tasks, timeout=2))

    def _draining_over(self) -> bool:
        if not self._stop:
            return False
        idle = not self.queue and not self.ledger.waiting
        return idle or time.monotonic() >= self._deadline

    async def _run(self) -> None:
        import nats

        self._wake = asyncio.Event()
        backoff = BACKOFF_MIN_S
        down_since: float | None = None
        while not self._draining_over():
            why: str | None = None
            try:
                nc = await nats.connect(**self._opts)
            except Exception as exc:
                # nats-py raises NoServersError; the cause came to error_cb before
                cause: BaseException = self._errors[-1] if self._errors else exc
                why = describe_error(cause)
            else:
                try:
                    await ensure_stream(nc, self.cfg, self.on_note)
                except StreamNotReady as exc:  # a cluster electing a leader: wait
                    await _close(nc)
                    why = str(exc)
                except ExportError as exc:
                    await _close(nc)
                    self._first_error = str(exc)
                    self._first.set()
                    self.on_note(f"export: {exc}")
                    return
            if why is not None:
                self._errors.clear()
                if not self._first.is_set():
                    self._first_error = why
                    self._first.set()
                elif down_since is None:
                    self.on_note(f"export: cannot reach {self._url} ({why}); "
                                 "retrying with backoff")  # fmt: skip
                down_since = down_since or time.monotonic()
                self._wake.clear()
                await self._sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_S)
                continue
            if down_since is not None and self._first.is_set():
                self.on_note(f"export: connected to {connected_server(nc, self._url)} after "
                             f"{time.monotonic() - down_since:.1f} s; resending "
                             f"{self.ledger.waiting} unacknowledged messages")  # fmt: skip
            self._first.set()
            down_since, backoff = None, BACKOFF_MIN_S
            self.connected = True
            try:
                await self._pump(nc)
            except _PumpConnectionLost:
                down_since = time.monotonic()
                if not self._draining_over():
                    self.on_note(f"export: lost the connection to {self._url}; reconnecting "
                                 "with backoff, events wait in the bounded queue")  # fmt: skip
            finally:
                self.connected = False
                self.ledger.connection_lost()
                await _close(nc)

    async def _sleep(self, seconds: float) -> None:
        """Wait up to ``seconds`` unless woken (the caller clears the event before the
        work the wake-up is about, so no wake-up is lost)."""
        assert self._wake is not None
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)

    async def _pump(self, nc: Any) -> None:
        """Publish until drained at stop; raises :class:`_PumpConnectionLost` on a closed
        connection."""
        inbox = AckInbox(nc, self._answer)
        try:
            await inbox.start()
        except Exception as exc:
            raise _PumpConnectionLost from exc
        assert self._wake is not None
        while True:
            self._wake.clear()
            if nc.is_closed or not nc.is_connected:
                raise _PumpConnectionLost
            while self.ledger.in_flight < WINDOW:
                msg = self._next_message()
                if msg is None:
                    break
                try:
                    await inbox.publish(msg.msg_id, msg.subject, msg.body, msg.headers)
                except Exception as exc:
                    self.ledger.unsent(msg)
                    raise _PumpConnectionLost from exc
                self.ledger.sent(msg, time.monotonic())
            if self._stats:
                with contextlib.suppress(Exception):  # best effort: a newer one follows
                    msg = self._stats.popleft()
                    await inbox.publish("stats", msg.subject, msg.body, msg.headers)
            self.ledger.expire(time.monotonic(), ACK_TIMEOUT_S)
            if self._draining_over():
                self._give_up()
                await self._publish_final(nc)
                return
            await self._sleep(0.25 if self.ledger.waiting else 1.0)

    def _next_message(self) -> Message | None:
        msg = self.ledger.next_to_send()
        if msg is not None:
            return msg
        batch = self.queue.take()
        if batch is None:
            return None
        for m in self.encoder.encode(batch):
            self.ledger.add(m)
        # Encoding holds the GIL: hand it to the drain thread if it waits for it (a
        # drain kept waiting lets the kernel rings fill; sleep(0) releases the GIL).
        time.sleep(0)
        return self.ledger.next_to_send()

    def _answer(self, token: str, ans: Answer) -> None:
        """Runs on the loop for every reply on the acknowledgement inbox."""
        if token == "stats":
            return
        self.ledger.answer(token, ans)
        if self.ledger.refusals:
            why = self.ledger.refusals[-1]
            self.ledger.refusals.clear()
            if why != self._last_refusal:
                self._last_refusal = why
                self.on_note(f"export: the stream refuses messages ({why}); their events "
                             "are counted as export_dropped")  # fmt: skip
        assert self._wake is not None
        if ans.outcome != "retry":  # "not now" (a cluster electing a stream leader): the
            self._wake.set()  # resend waits for the pump's next round, not a hot loop

    _last_refusal = ""

    async def _publish_final(self, nc: Any) -> None:
        """The summary, once the counts are final (after :meth:`_give_up`)."""
        if self._final is None:
            return
        msg = self._final()
        with contextlib.suppress(Exception):
            await nc.jetstream().publish(msg.subject, msg.body, headers=dict(msg.headers),
                                         timeout=2)  # fmt: skip

    def _give_up(self) -> None:
        """Count what never reached the stream (idempotent: empties what it counts)."""
        self.ledger.give_up()
        for batch in self.queue.take_all():
            self.counters.drop(batch.cpu, batch.count, "unsent")


async def _close(nc: Any) -> None:
    with contextlib.suppress(Exception):
        await asyncio.wait_for(nc.close(), timeout=2)


__all__ = ["ACK_TIMEOUT_S", "WINDOW", "Publisher"]
