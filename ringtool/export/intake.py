"""What ``ringtool collect`` lets in: one stream message, checked against who sent it.

The broker knows who published a message only by the subject it allowed that user to
publish on (README "Tracing a fleet": one user per host, publish rights on
``<prefix>.<host>.*`` only). So the subject is the origin, and everything else must
agree with it: :meth:`Intake.take` decodes a message (:func:`ringtool.export.reading.decode`)
and refuses, as :class:`~ringtool.errors.BadMessageError`, one

* whose subject is not ``<prefix>.<host>.<type>`` with subject tokens (``bad subject``);
* whose ``Ringtool-Host`` or ``Ringtool-Type`` header is not its subject's host or type,
  whose ``stats/1`` body names another host, boot, run or source, or whose event line
  carries a ``host`` other than the subject's (``forged origin``);
* whose event lines are not JSON objects with a finite ``ts`` (``bad body``), when the
  lines are read: every line for ``--merged`` (which writes them), the last one
  otherwise (its time is the host's lag).

For ``--merged`` each line is written back as a JSON object whose first key ``host`` is
the verified host, once (a line's own ``host`` is dropped when it agrees).
"""

from __future__ import annotations

import json
from typing import Any

from ringtool.errors import BadMessageError
from ringtool.export.config import is_token
from ringtool.export.format import STATS, STATS_KIND
from ringtool.export.reading import (
    FORGED,
    DecoderCache,
    Received,
    decode,
    json_object,
    line_ts_ns,
)

BAD_SUBJECT = "bad subject"
#: An exception the decoder did not expect (a ringtool bug, counted, never fatal).
UNDECODABLE = "undecodable"
#: How an event line is written back (what ``trace --json`` writes: the same separators).
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), allow_nan=False).encode


def subject_origin(subject: str, prefix: str) -> tuple[str, str]:
    """``(host, type)`` of ``<prefix>.<host>.<type>``; BadMessageError otherwise."""
    host, _, kind = subject[len(prefix) + 1 :].partition(".")
    if not subject.startswith(prefix + ".") or not (is_token(host) and is_token(kind)):
        raise BadMessageError(BAD_SUBJECT, f"{subject[:120]!r} is not {prefix}.<host>.<type>")
    return host, kind


class Intake:
    """Decodes and checks messages of subjects ``<prefix>.<host>.<type>`` (module doc).
    ``timestamps``: read every event line (``--merged``), not only the last."""

    def __init__(self, prefix: str, decoders: DecoderCache, timestamps: bool) -> None:
        self.prefix = prefix
        self.decoders = decoders
        self.timestamps = timestamps

    def take(
        self, subject: str, headers: dict[str, str] | None, body: bytes
    ) -> tuple[Received, list[int]]:
        """The message as :class:`Received` and its events' wall-clock ns (every
        event's with ``timestamps``, else the newest one's, or none); BadMessageError
        when it is refused (module doc)."""
        host, kind = subject_origin(subject, self.prefix)
        rec = decode(headers, body, self.decoders)
        if rec.host != host:
            raise BadMessageError(FORGED, f"Ringtool-Host {rec.host!r} on the subject of "
                                  f"host {host!r}")  # fmt: skip
        if rec.type != kind or (kind == STATS_KIND) != (rec.fmt == STATS):
            raise BadMessageError(FORGED, f"{rec.fmt} message of Ringtool-Type {rec.type!r} on "
                                  f"a subject of type {kind!r}")  # fmt: skip
        if rec.stats is not None:
            return rec, []
        if self.timestamps:
            return rec, self._stamp(rec)
        if rec.ts_ns:  # rows/1: decoded with its times
            return rec, [max(rec.ts_ns)]
        return rec, [self._ts(rec, json_object(rec.lines[-1]))]

    def _ts(self, rec: Received, obj: dict[str, Any]) -> int:
        claimed = obj.get("host", rec.host)
        if claimed != rec.host:
            raise BadMessageError(FORGED, f"an event line says host {str(claimed)[:80]!r} on "
                                  f"the subject of host {rec.host!r}")  # fmt: skip
        return line_ts_ns(obj)

    def _stamp(self, rec: Received) -> list[int]:
        """Every line checked and written back with ``host`` first (module doc);
        ``rec.ts_ns`` their times (rows/1 keeps the decoder's, exact to the ns)."""
        lines, ts = [], []
        for line in rec.lines:
            obj = json_object(line)
            ts.append(self._ts(rec, obj))
            obj.pop("host", None)
            lines.append(_dumps({"host": rec.host, **obj}))
        rec.lines = lines
        if not rec.ts_ns:
            rec.ts_ns = ts
        return rec.ts_ns


__all__ = ["BAD_SUBJECT", "UNDECODABLE", "Intake", "subject_origin"]
