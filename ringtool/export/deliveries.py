"""What a durable consumer delivered to this collector, and what it cannot have.

A durable consumer may be read by more than one ``collect``, one after the other (a
second run resumes after what the first acknowledged) or at the same time (each
message goes to one of them). A lane's event numbers this collector never saw are then
not all lost: some were *read elsewhere*. JetStream numbers every delivery of a
consumer (the consumer sequence, redeliveries included) and every message of the
stream (the stream sequence); new messages are delivered in stream order. So:

* stream sequences this collector received are *here*;
* when two deliveries to this collector have consecutive consumer sequences, nothing
  was delivered to anyone between them: the stream sequences between the consumer's
  highest delivered one before (known: from the consumer's info at bind, or from this
  collector's own previous new delivery; 0 for a consumer that has delivered nothing)
  and the new message were *skipped* by the consumer (deleted from the stream, removed
  by its limits, or not on its subjects) and reached no reader;
* any other stream sequence may have gone to another reader (before this one bound the
  consumer, or between its deliveries).

:meth:`Deliveries.elsewhere` says whether a stream range holds such a sequence: a hole
in a lane between messages seen at stream sequences ``a`` and ``b`` is a *gap* (events
lost: export drops, messages deleted) only when every stream sequence between them
was here or skipped; otherwise it is counted as read elsewhere. Messages without
JetStream metadata (stream sequence 0) place nothing: their holes are gaps.
"""

from __future__ import annotations

from ringtool.export.seqset import SeqSet


class Deliveries:
    """The stream sequences here and skipped (module doc)."""

    def __init__(self) -> None:
        self.here = SeqSet()
        self.skipped = SeqSet()
        self._cseq: int | None = None  # consumer sequence of the last delivery known
        self._high: int | None = None  # highest stream sequence delivered as of then

    def bind(self, consumer_seq: int, stream_seq: int) -> None:
        """The consumer's last delivery (consumer and stream sequence) when this
        collector bound it, from its info, before the first fetch. A consumer that has
        delivered nothing (consumer sequence 0) gave no message to anyone: its stream
        sequence is only where it starts (the stream's first, past what the stream's
        limits removed), so everything before its first delivery was skipped."""
        self._cseq, self._high = consumer_seq, stream_seq if consumer_seq else 0

    def take(self, consumer_seq: int, stream_seq: int, new: bool) -> bool:
        """One delivery to this collector (``new``: its first delivery by the
        consumer); False when this collector already had it (delivered again)."""
        follows = self._cseq is not None and consumer_seq == self._cseq + 1
        if new:
            high = self._high
            if follows and high is not None and stream_seq > high + 1:
                self.skipped.add(high + 1, stream_seq - 1)
            self._high = stream_seq
        elif not follows:
            self._high = None  # others' deliveries in between: the high mark is unknown
        self._cseq = consumer_seq
        before = self.here.duplicates
        self.here.add(stream_seq, stream_seq)
        return self.here.duplicates == before

    def elsewhere(self, after: int, before: int) -> bool:
        """Whether a stream sequence strictly between ``after`` and ``before`` (either
        order) may have been delivered to another reader (module doc)."""
        lo, hi = min(after, before) + 1, max(after, before) - 1
        if lo > hi:
            return False
        return hi - lo + 1 > self.here.count_in(lo, hi) + self.skipped.count_in(lo, hi)


__all__ = ["Deliveries"]
