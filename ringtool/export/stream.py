"""The JetStream stream the exporter writes to: created when missing, checked when not.

:func:`ensure_stream` makes sure ``cfg.stream`` exists and takes the exporter's
subjects (``<prefix>.>``). A stream it creates has file storage, the ``limits``
retention, ``cfg.stream_replicas`` replicas (3 for a cluster of three: it keeps
storing and answering with one node down) and a duplicate window of
:data:`DUPLICATE_WINDOW_S` (the time within which a resend after a reconnect is
recognised; the stream's replicas share it, so a resend to a new stream leader is
recognised too); an existing stream is used as it is
(its limits, e.g. ``max_bytes`` with ``discard: new``, then decide what it refuses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ringtool.errors import ExportError
from ringtool.export.config import ExportConfig

DUPLICATE_WINDOW_S = 600.0
#: How long a JetStream API request (stream info, create) may wait for its answer.
API_TIMEOUT_S = 5.0


class StreamNotReady(ExportError):
    """JetStream did not answer or said it is not available now (a cluster electing a
    leader after a node died, a server still starting): try again later."""


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
    ``<prefix>.<host>.*`` or cannot be created; :class:`StreamNotReady` when JetStream
    does not answer within :data:`API_TIMEOUT_S` or answers 503 (not available now)."""
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout

    try:
        await _ensure(nc, cfg, on_note)
    except (TimeoutError, NatsTimeout):
        raise StreamNotReady(f"stream {cfg.stream}: no answer from JetStream within "
                             f"{API_TIMEOUT_S:.0f} s (is JetStream on, and may this user "
                             "publish there?)") from None  # fmt: skip
    except NoRespondersError:
        raise StreamNotReady(f"stream {cfg.stream}: JetStream does not answer (not "
                             "enabled, or not ready)") from None  # fmt: skip


def _not_ready(exc: Any, what: str) -> ExportError:
    cls = StreamNotReady if getattr(exc, "code", None) == 503 else ExportError
    return cls(f"{what}: {exc.description}")


async def _ensure(nc: Any, cfg: ExportConfig, on_note: Callable[[str], None]) -> None:
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.api import StorageType, StreamConfig
    from nats.js.errors import APIError, NotFoundError

    js = nc.jetstream(timeout=API_TIMEOUT_S)
    probe = cfg.subject(cfg.host or "host", "open")
    # a request the user may not publish gets no answer (the broker says "permissions
    # violation" to the error callback): a timeout names the right that is missing
    try:
        info = await js.stream_info(cfg.stream)
    except NotFoundError:
        try:
            await js.add_stream(StreamConfig(
                name=cfg.stream, subjects=[cfg.all_subjects], storage=StorageType.FILE,
                duplicate_window=DUPLICATE_WINDOW_S, num_replicas=cfg.stream_replicas,
            ))  # fmt: skip
        except APIError as exc:
            hint = ""
            if cfg.stream_replicas > 1:
                hint = f" ({cfg.stream_replicas} replicas asked: --export-replicas sets them)"
            raise _not_ready(exc, f"cannot create stream {cfg.stream}{hint}") from None
        except NatsTimeout:
            raise ExportError(f"stream {cfg.stream} does not exist and no answer to creating "
                              "it: create it with a user allowed to (docs/fleet.md)"
                              ) from None  # fmt: skip
        copies = f", {cfg.stream_replicas} replicas" if cfg.stream_replicas > 1 else ""
        on_note(f"export: created stream {cfg.stream} (subjects {cfg.all_subjects}, file "
                f"storage{copies})")  # fmt: skip
        return
    except APIError as exc:
        raise _not_ready(exc, f"stream {cfg.stream}") from None
    subjects = info.config.subjects or []
    if not any(subject_matches(p, probe) for p in subjects):
        raise ExportError(
            f"stream {cfg.stream} takes {', '.join(subjects) or 'no subjects'}, not "
            f"{cfg.all_subjects}: give --export-stream or --export-subject-prefix"
        )


__all__ = ["API_TIMEOUT_S", "DUPLICATE_WINDOW_S", "StreamNotReady", "ensure_stream",
           "subject_matches"]  # fmt: skip
