"""The JetStream stream the exporter writes to: created when missing, checked when not.

:func:`ensure_stream` makes sure ``cfg.stream`` exists and takes the exporter's
subjects (``<prefix>.>``). A stream it creates has file storage, the ``limits``
retention and a duplicate window of :data:`DUPLICATE_WINDOW_S` (the time within which
a resend after a reconnect is recognised); an existing stream is used as it is
(its limits, e.g. ``max_bytes`` with ``discard: new``, then decide what it refuses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ringtool.errors import ExportError
from ringtool.export.config import ExportConfig

DUPLICATE_WINDOW_S = 600.0


def subject_matches(pattern: str, subject: str) -> bool:
    """NATS wildcard matching: ``*`` one token, ``>`` one or more trailing tokens."""
    p, s = pattern.split("."), subject.split(".")
    for i, tok in enumerate(p):
        if tok == ">":
            return len(s) > i
        if i >= len(s) or (tok != "*" and tok != s[i]):
            return False
    return len(p) == len(s)


async def ensure_stream(nc: Any, cfg: ExportConfig, on_note: Callable[[str], None]) -> None:
    """Create ``cfg.stream`` when missing; ExportError when it exists but does not take
    ``<prefix>.<host>.*`` or cannot be created."""
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.api import StorageType, StreamConfig
    from nats.js.errors import APIError, NotFoundError

    js = nc.jetstream()
    probe = cfg.subject(cfg.host or "host", "open")
    # a request the user may not publish gets no answer (the broker says "permissions
    # violation" to the error callback): a timeout names the right that is missing
    try:
        info = await js.stream_info(cfg.stream)
    except NotFoundError:
        try:
            await js.add_stream(StreamConfig(
                name=cfg.stream, subjects=[cfg.all_subjects], storage=StorageType.FILE,
                duplicate_window=DUPLICATE_WINDOW_S,
            ))  # fmt: skip
        except APIError as exc:
            raise ExportError(f"cannot create stream {cfg.stream}: {exc.description}") from None
        except NatsTimeout:
            raise ExportError(f"stream {cfg.stream} does not exist and no answer to creating "
                              "it: create it with a user allowed to (README \"Tracing a "
                              "fleet\")") from None  # fmt: skip
        on_note(f"export: created stream {cfg.stream} (subjects {cfg.all_subjects}, file "
                "storage)")  # fmt: skip
        return
    except APIError as exc:
        raise ExportError(f"stream {cfg.stream}: {exc.description}") from None
    except NatsTimeout:
        raise ExportError(f"no answer to $JS.API.STREAM.INFO.{cfg.stream}: is JetStream on, "
                          "and may this user publish there?") from None  # fmt: skip
    subjects = info.config.subjects or []
    if not any(subject_matches(p, probe) for p in subjects):
        raise ExportError(
            f"stream {cfg.stream} takes {', '.join(subjects) or 'no subjects'}, not "
            f"{cfg.all_subjects}: give --export-stream or --export-subject-prefix"
        )


__all__ = ["DUPLICATE_WINDOW_S", "ensure_stream", "subject_matches"]
