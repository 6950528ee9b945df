"""``ringtool export-stream``: the broker admin's one command that creates the stream
the hosts export to, or checks the one that is there (docs/fleet.md, "One user per
host"), so that a fleet needs no ``nats`` CLI.

A host of that guide has no ``$JS.API`` right: it cannot create the stream, only check
that it is there (:mod:`ringtool.export.stream`'s probe). :func:`setup_stream`, run with
a user allowed the JetStream API, makes it as the guide asks: subjects ``<prefix>.>``,
file storage, ``limits`` retention, the exporter's duplicate window
(:data:`ringtool.export.stream.DUPLICATE_WINDOW_S`, at most the stream's max age) and
**``deny_purge`` and ``deny_delete``** (a host's publish with a JetStream API subject
as its reply subject would otherwise have the stream's acknowledgement purge it). A
stream already there is kept with its limits: it must take the subjects, and is given
``deny_purge`` and ``deny_delete`` when it lacks them (JetStream lets them be set,
never unset). Every outcome is one line; a problem is an
:class:`~ringtool.errors.ExportError`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ringtool.errors import ExportError
from ringtool.export.config import (
    DEFAULT_PREFIX,
    DEFAULT_STREAM,
    connect_options,
    describe_error,
    display_url,
    quiet_callbacks,
)
from ringtool.export.stream import API_TIMEOUT_S, DUPLICATE_WINDOW_S, subject_matches


@dataclass(frozen=True)
class StreamSpec:
    """The stream to make: its name, the subject prefix of the exporters, and the
    limits of a new stream (``replicas`` 1–5; ``max_age_s`` 0 and ``max_bytes`` -1:
    none)."""

    url: str
    stream: str = DEFAULT_STREAM
    subject_prefix: str = DEFAULT_PREFIX
    creds: Path | None = None
    tls_ca: Path | None = None
    replicas: int = 1
    max_age_s: float = 0.0
    max_bytes: int = -1


def stream_config(spec: StreamSpec) -> Any:
    """The nats-py ``StreamConfig`` of a new stream for ``spec`` (module doc)."""
    from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig

    return StreamConfig(
        name=spec.stream, subjects=[f"{spec.subject_prefix}.>"],
        retention=RetentionPolicy.LIMITS, storage=StorageType.FILE, discard=DiscardPolicy.OLD,
        duplicate_window=min(DUPLICATE_WINDOW_S, spec.max_age_s or DUPLICATE_WINDOW_S),
        num_replicas=spec.replicas,
        max_age=spec.max_age_s or None, max_bytes=spec.max_bytes,
        deny_delete=True, deny_purge=True,
    )  # fmt: skip


def _describe(cfg: Any, messages: int | None = None) -> str:
    age = f"{cfg.max_age:g} s" if cfg.max_age else "none"
    size = f"{cfg.max_bytes} bytes" if cfg.max_bytes and cfg.max_bytes > 0 else "none"
    held = "" if messages is None else f", {messages} messages"
    return (f"subjects {', '.join(cfg.subjects or [])}, {cfg.num_replicas} replica(s), "
            f"max age {age}, max bytes {size}, deny_purge and deny_delete{held}")  # fmt: skip


async def setup_stream(nc: Any, spec: StreamSpec) -> str:
    """Create ``spec.stream`` or check the one there (module doc) on the connection
    ``nc``; one line saying what it found or did."""
    from nats.errors import TimeoutError as NatsTimeout
    from nats.js.errors import APIError, NotFoundError

    js = nc.jetstream(timeout=API_TIMEOUT_S)
    probe = f"{spec.subject_prefix}.host.open"
    try:
        try:
            info = await js.stream_info(spec.stream)
        except NotFoundError:
            made = await js.add_stream(stream_config(spec))
            return f"created stream {spec.stream}: {_describe(made.config)}"
        subjects = info.config.subjects or []
        if not any(subject_matches(p, probe) for p in subjects):
            raise ExportError(f"stream {spec.stream} takes {', '.join(subjects) or 'no subjects'}"
                              f", not {spec.subject_prefix}.>: give --stream or "
                              "--subject-prefix")  # fmt: skip
        if info.config.deny_purge and info.config.deny_delete:
            return (f"stream {spec.stream} is ready: "
                    f"{_describe(info.config, info.state.messages)}")  # fmt: skip
        made = await js.update_stream(replace(info.config, deny_purge=True, deny_delete=True))
        return (
            f"stream {spec.stream} now refuses purge and message delete (set "
            f"deny_purge and deny_delete): {_describe(made.config, info.state.messages)}"
        )
    except (TimeoutError, NatsTimeout):
        raise ExportError(f"stream {spec.stream}: no answer from JetStream within "
                          f"{API_TIMEOUT_S:.0f} s: is JetStream enabled, and may this user "
                          "use $JS.API (the broker's admin of docs/fleet.md)?"
                          ) from None  # fmt: skip
    except APIError as exc:
        raise ExportError(f"stream {spec.stream}: {exc.description}") from None


def run_setup(spec: StreamSpec) -> str:
    """Connect to ``spec.url``, :func:`setup_stream`, close; its line (ExportError for
    a broker that cannot be reached or refuses the user)."""

    async def main() -> str:
        from ringtool.export.nats_client import connect

        errors: list[BaseException] = []
        opts = connect_options(spec.url, spec.creds, spec.tls_ca, API_TIMEOUT_S)
        opts.update(quiet_callbacks(errors), name="ringtool-export-stream")
        try:
            nc = await connect(opts)
        except Exception as exc:
            cause = errors[-1] if errors else exc
            raise ExportError(f"{display_url(spec.url)}: {describe_error(cause)}") from None
        try:
            return await setup_stream(nc, spec)
        finally:
            await nc.close()

    return asyncio.run(main())


__all__ = ["StreamSpec", "run_setup", "setup_stream", "stream_config"]
