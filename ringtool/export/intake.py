"""What ``ringtool collect`` lets in: one stream message, checked against who sent it.

The broker knows who published a message only by the subject it allowed that user to
publish on (docs/fleet.md: one user per host, publish rights on
``<prefix>.<host>.*`` only). So the subject is the origin, and everything else must
agree with it: :meth:`Intake.take` decodes a message (:func:`ringtool.export.reading.decode`)
and refuses, as :class:`~ringtool.errors.BadMessageError`, one

* whose subject is not ``<prefix>.<host>.<type>`` with subject tokens (``bad subject``);
* whose ``Ringtool-Host`` or ``Ringtool-Type`` header is not its subject's host or type,
  whose ``stats/1`` body names another host, boot, run or source, or whose event line
  carries a ``host`` other than the subject's (``forged origin``);
* whose event lines are not JSON objects with a finite ``ts`` and only numbers JSON
  can write (no NaN, Infinity, 1e400) (``bad body``), when the lines are read: every
  line for ``--merged`` (which writes them), the last one otherwise (its time is the
  host's lag).

For ``--merged`` each line is written back as a JSON object whose first key ``host`` is
the verified host, once (a line's own ``host`` is dropped when it agrees); its other
keys are the host's own data, passed on as it wrote them but with every character a
terminal would act on (C0/C1 controls, DEL, bidi overrides) as its JSON escape
(:func:`ringtool.event.safe_text.printable_json`): the line is data, never terminal
control, and parses to the same object.
"""

from __future__ import annotations

import json

from ringtool.errors import BadMessageError
from ringtool.event.safe_text import printable_json
from ringtool.export.config import is_token
from ringtool.export.reading import (
    BAD_BODY,
    FORGED,
    DecoderCache,
    Received,
    decode,
    json_object,
    line_ts_ns,
)
from ringtool.export.wire import STATS, STATS_KIND

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
        return rec, [self._line(rec, rec.lines[-1])[0]]

    def _line(self, rec: Received, line: str) -> tuple[int, str]:
        """An event line's time (ns) and the line written back with the verified host
        first; BadMessageError when it is not a JSON object with a time, names another
        host or holds what JSON cannot write (NaN, Infinity, 1e400).

        A printable line that is one JSON object from its first character, without
        ``host``, is written back as it came with ``"host": ...`` put in front (the
        common case, one parse); any other is written anew, then made printable (a raw
        control may only stand in a string once written anew: JSON whitespace outside
        strings may be a tab or CR)."""
        obj = json_object(line)
        host = rec.host
        claimed = obj.pop("host", None)
        if claimed is not None and claimed != host:
            raise BadMessageError(FORGED, f"an event line says host {str(claimed)[:80]!r} on "
                                  f"the subject of host {host!r}")  # fmt: skip
        ts = line_ts_ns(obj)
        if claimed is None and obj and line[0] == "{" and line.isprintable():
            return ts, '{"host": "' + host + '", ' + line[1:]  # a token: nothing to escape
        try:
            return ts, printable_json(_dumps({"host": host, **obj}))
        except (ValueError, RecursionError):  # (parsed, so not expected)
            raise BadMessageError(BAD_BODY, "an event line cannot be written back") from None

    def _stamp(self, rec: Received) -> list[int]:
        """Every line checked and written back (:meth:`_line`); ``rec.ts_ns`` their
        times (rows/1 keeps the decoder's, exact to the ns)."""
        pairs = [self._line(rec, line) for line in rec.lines]
        rec.lines = [line for _, line in pairs]
        if not rec.ts_ns:
            rec.ts_ns = [ts for ts, _ in pairs]
        return rec.ts_ns


__all__ = ["BAD_SUBJECT", "UNDECODABLE", "Intake", "subject_origin"]
