"""The JetStream stream the exporter writes to: created when missing, checked when not.

:func:`ensure_stream` makes sure ``cfg.stream`` exists and takes the exporter's
subjects (``<prefix>.>``). It asks first with a *probe*: a plain publish on the
host's own subject ``<prefix>.<host>.open`` with the headers ``Nats-Expected-Stream:
<stream>`` and ``Nats-Expected-Last-Sequence: 2**64-1``, which the stream checks before
storing (JetStream's optimistic concurrency control): no stream's last sequence is
2**64-1, so the stream that takes the subject refuses it with *wrong last sequence*
(stored: nothing), another stream with *expected stream does not match*. So a host
needs no JetStream API right at all, only its own subjects (docs/fleet.md gives hosts
none: ``$JS.API.STREAM.INFO`` would show a host every host's subjects and counts).
Only when nothing listens on the probe's subject (no stream takes it) does it use the
stream API: ``STREAM.INFO``, ``STREAM.CREATE``. A stream it creates has file storage, the ``limits``
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
#: ``Nats-Expected-Last-Sequence`` of the probe: no stream is there, so none stores it.
PROBE_LAST_SEQ = str(2**64 - 1)
#: JetStream's error codes for the probe: the stream takes the subject (and stored
#: nothing), another stream takes it.
WRONG_LAST_SEQ = 10071
WRONG_STREAM = 10060


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


async def _probe(js: Any, cfg: ExportConfig, probe: str) -> bool:
    """True when ``cfg.stream`` takes ``probe`` (module doc); False when nothing
    listens on ``probe`` (no stream takes it, or a cluster is electing its leader);
    ExportError when another stream takes it; :class:`StreamNotReady` when the answer
    is 503 or does not come."""
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.errors import APIError, NoStreamResponseError

    headers = {"Nats-Expected-Stream": cfg.stream, "Nats-Expected-Last-Sequence": PROBE_LAST_SEQ}
    try:
        await js.publish(probe, b"", headers=headers, timeout=API_TIMEOUT_S)
    except APIError as exc:
        if exc.err_code == WRONG_LAST_SEQ:
            return True
        if exc.err_code == WRONG_STREAM:
            raise ExportError(f"{probe} goes to another stream than {cfg.stream}: give "
                              "--export-stream or --export-subject-prefix") from None  # fmt: skip
        raise _not_ready(exc, f"stream {cfg.stream}") from None
    except (NoStreamResponseError, NoRespondersError):
        return False
    except (TimeoutError, NatsTimeout):
        raise StreamNotReady(f"stream {cfg.stream}: no answer to a publish on {probe} within "
                             f"{API_TIMEOUT_S:.0f} s; if the stream does not exist, create it "
                             "as the broker's admin: ringtool export-stream (docs/fleet.md)"
                             ) from None  # fmt: skip
    return True  # stored: cannot be (no stream is at sequence 2**64-1)


async def _ensure(nc: Any, cfg: ExportConfig, on_note: Callable[[str], None]) -> None:
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.api import StorageType, StreamConfig
    from nats.js.errors import APIError, NotFoundError

    js = nc.jetstream(timeout=API_TIMEOUT_S)
    probe = cfg.subject(cfg.host or "host", "open")
    if await _probe(js, cfg, probe):
        return
    # a request the user may not publish gets no answer (the broker says "permissions
    # violation" to the error callback): a timeout names the right that is missing
    try:
        info = await js.stream_info(cfg.stream)
    except NatsTimeout:  # no right to ask (docs/fleet.md's hosts have none)
        raise StreamNotReady(
            f"no stream takes {probe} and no answer to stream info within "
            f"{API_TIMEOUT_S:.0f} s: if stream {cfg.stream} does not exist, create it as "
            "the broker's admin: ringtool export-stream (docs/fleet.md)"
        ) from None
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
                              "it: create it as the broker's admin: ringtool export-stream "
                              "(docs/fleet.md)"
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


__all__ = ["API_TIMEOUT_S", "DUPLICATE_WINDOW_S", "PROBE_LAST_SEQ", "StreamNotReady",
           "ensure_stream", "subject_matches"]  # fmt: skip
