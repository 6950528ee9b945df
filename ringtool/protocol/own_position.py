"""A consumer's own ring position over the shared word that publishes it.

RINGBUF ``consumer_pos`` and perf ``data_tail`` are u64 words in a page every process
that maps the ring may write. The producer reads them to know what space is free; the
consumer must never read them back to know where to walk, or a value someone else
stored (a position inside a record) makes payload bytes read as record headers.

:class:`OwnPosition` keeps the consumer's position privately: it reads the shared word
once, when created (where a new consumer starts), and afterwards only stores it.
:meth:`OwnPosition.check` compares the word with the last value stored: a difference
is another writer's; it is counted (:attr:`OwnPosition.scribbles`), our value is
stored back and :class:`ConsumerPositionError` raised, so the caller reads nothing from
it. :meth:`OwnPosition.take_over` adopts the word on purpose (a hand-over between
consumers taking turns).

Memory ordering: every access is one aligned 8-byte load/store through a
``memoryview.cast("Q")``; on x86-64 (TSO) the store is a release, which is what the
producer's side pairs with (the callers name the kernel operation:
``smp_load_acquire(&rb->consumer_pos)`` in ``__bpf_ringbuf_reserve``,
``READ_ONCE(user_page->data_tail)`` + ``smp_mb()`` in ``perf_output_begin``). The
loads of the word need no ordering: producers never store it.
"""

from __future__ import annotations

from ringtool.errors import ConsumerPositionError


class OwnPosition:
    """The private position over ``words[index]`` (a ``"Q"`` memoryview); ``what``
    names the word in errors (``ring 0: consumer_pos``)."""

    __slots__ = ("_index", "_words", "pos", "scribbles", "what")

    def __init__(self, words: memoryview, index: int, what: str) -> None:
        self._words = words
        self._index = index
        self.what = what
        #: the consumer's own position: where it walks from
        self.pos = int(words[index])  # plain load, once: producers never store it
        #: times the shared word held a value this consumer had not stored
        self.scribbles = 0

    def shared(self) -> int:
        """The shared word as it is now (someone else may have changed it)."""
        return int(self._words[self._index])  # plain load: producers never store it

    def store(self, pos: int) -> None:
        """Make ``pos`` ours and publish it: a release store (TSO), which the
        producer's acquire of the word pairs with (see the module doc)."""
        self.pos = pos
        self._words[self._index] = pos

    def take_over(self) -> None:
        """Adopt the shared word as our position (a deliberate hand-over)."""
        self.pos = self.shared()

    def check(self) -> None:
        """Raise :class:`ConsumerPositionError` (counted, ours stored back) when the
        shared word is not the value this consumer stored last."""
        found = self.shared()
        if found == self.pos:
            return
        self.scribbles += 1
        self._words[self._index] = self.pos  # release: the producer sees ours again
        raise ConsumerPositionError(
            f"{self.what} was changed by another writer to {found:#x} (this consumer is "
            f"at {self.pos:#x}); its own position was stored back and no record was read "
            "from the other one",
            expected=self.pos,
            found=found,
        )


__all__ = ["OwnPosition"]
