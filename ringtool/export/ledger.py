"""Which messages the stream has not acknowledged yet, and what each answer means.

Every encoded message stays in the :class:`Ledger` until it is final: acknowledged
(``ok``, also ``duplicate``: counted ``exported`` once) or refused (counted
``export_dropped``, reason ``refused``). Because a message can be sent more than once
(a resend after an acknowledgement timeout or a reconnect carries the same
``Nats-Msg-Id``), the ledger counts the *outstanding* sends of each message: a refusal
is final only when no other send of it can still be stored; a temporary refusal
(``retry``) queues it again once no send is outstanding. So a message is never counted
as dropped while a copy of it may still land in the stream.

Not thread-safe: the publisher's event loop owns it.
"""

from __future__ import annotations

from collections import deque

from ringtool.export.accounting import ExportCounters
from ringtool.export.acks import Answer
from ringtool.export.wire import Message


class Ledger:
    """Unacknowledged messages by ``Nats-Msg-Id`` (see module doc)."""

    def __init__(self, counters: ExportCounters) -> None:
        self.counters = counters
        self._msgs: dict[str, Message] = {}
        self._outstanding: dict[str, int] = {}
        self._sent_at: dict[str, float] = {}
        self._queue: deque[str] = deque()
        self.refusals: list[str] = []

    def add(self, msg: Message) -> None:
        """A new message, to be sent."""
        self._msgs[msg.msg_id] = msg
        self._outstanding[msg.msg_id] = 0
        self._queue.append(msg.msg_id)

    def next_to_send(self) -> Message | None:
        """The next message queued for a (re)send, or None."""
        while self._queue:
            msg_id = self._queue.popleft()
            msg = self._msgs.get(msg_id)
            if msg is not None:
                return msg
        return None

    def sent(self, msg: Message, now: float) -> None:
        msg.sends += 1
        if msg.sends > 1:  # counted when it goes out: a queued resend made final by a
            self.counters.resent()  # late answer is none, one after a reconnect is one
        self._outstanding[msg.msg_id] += 1
        self._sent_at[msg.msg_id] = now

    def unsent(self, msg: Message) -> None:
        """A send that failed locally (connection gone): first in line again."""
        self._queue.appendleft(msg.msg_id)

    def answer(self, msg_id: str, ans: Answer) -> bool:
        """Apply the stream's answer to one send; True when the message became final."""
        msg = self._msgs.get(msg_id)
        if msg is None:  # already final: a late answer to another send of it
            if ans.outcome == "ok" and ans.duplicate:
                self.counters.duplicate()  # the stream recognised the resend
            return False
        left = self._outstanding[msg_id] = max(0, self._outstanding[msg_id] - 1)
        if ans.outcome == "ok":
            self.counters.acked(msg.cpu, msg.count, len(msg.body), duplicate=ans.duplicate)
            self._forget(msg_id)
            return True
        if left:
            return False  # another send of it may still be stored: wait for that answer
        if ans.outcome == "refused":
            self.counters.drop(msg.cpu, msg.count, "refused")
            self.refusals.append(ans.why)
            self._forget(msg_id)
            return True
        self._sent_at.pop(msg_id, None)
        self._queue.append(msg_id)
        return False

    def _forget(self, msg_id: str) -> None:
        del self._msgs[msg_id]
        del self._outstanding[msg_id]
        self._sent_at.pop(msg_id, None)

    def expire(self, now: float, timeout: float) -> int:
        """Queue again the messages whose last send got no answer within ``timeout``."""
        late = [m for m, t in self._sent_at.items() if now - t > timeout]
        for msg_id in late:
            del self._sent_at[msg_id]
            self._queue.append(msg_id)
        return len(late)

    def connection_lost(self) -> None:
        """Answers to sends on the old connection will never come: queue all again."""
        for msg_id in list(self._sent_at):
            self._queue.append(msg_id)
        self._sent_at.clear()
        for msg_id in self._outstanding:
            self._outstanding[msg_id] = 0

    @property
    def in_flight(self) -> int:
        return len(self._sent_at)

    @property
    def waiting(self) -> int:
        """Messages not final (in flight or queued)."""
        return len(self._msgs)

    def give_up(self) -> None:
        """The end: count every message that is not final as dropped (``unconfirmed``
        when it was ever sent: the stream may hold it; ``unsent`` otherwise)."""
        for msg in self._msgs.values():
            self.counters.drop(msg.cpu, msg.count, "unconfirmed" if msg.sends else "unsent")
        self._msgs.clear()
        self._outstanding.clear()
        self._sent_at.clear()
        self._queue.clear()


__all__ = ["Ledger"]
