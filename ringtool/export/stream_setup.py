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

Those two flags cannot protect the stream on every server: nats-server before 2.10.27
(and 2.11.0) runs ``$JS.API.ACCOUNT.PURGE.<account>`` for a request from any account
(CVE-2025-30215), and the stream's acknowledgement sent to that subject as a host's
reply subject is such a request: it deletes every stream of the account, and with the
account name ``/`` the server's whole JetStream store. :func:`purge_exposed` names such a
server and :func:`run_setup` returns a warning for it (docs/fleet.md).
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


#: The first nats-server releases whose account purge answers the system account only.
PURGE_FIXED = ((2, 10, 27), (2, 11, 1))


def purge_exposed(version: str) -> bool:
    """Whether a nats-server of ``version`` (``2.9.10``; a pre-release or build suffix
    ignored) runs an account purge asked from any account (module doc); False for a
    version it cannot read."""
    try:
        got = tuple(int(part) for part in version.split("-")[0].split("+")[0].split("."))
    except ValueError:
        return False
    if len(got) != 3:
        return False
    return got < PURGE_FIXED[0] or (PURGE_FIXED[0][:2] < got[:2] and got < PURGE_FIXED[1])


def purge_warning(version: str, stream: str) -> str | None:
    """The warning for a server of ``version`` that :func:`purge_exposed`, else None."""
    if not purge_exposed(version):
        return None
    return (
        f"nats-server {version} deletes every stream of an account for a request from "
        "any account (CVE-2025-30215, fixed in 2.10.27 and 2.11.1): a host allowed to "
        f"publish into {stream}'s account can have {stream}'s own acknowledgement ask it "
        "(its reply subject $JS.API.ACCOUNT.PURGE.<account>), whatever its permissions; "
        "give this account trusted hosts only, or upgrade the broker (docs/fleet.md)"
    )


def server_version(nc: Any) -> str:
    """``major.minor.patch`` of the server ``nc`` is connected to ("" when unknown)."""
    try:
        v = nc.connected_server_version
        return f"{v.major}.{v.minor}.{v.patch}"
    except (AttributeError, ValueError):
        return ""


def run_setup(spec: StreamSpec) -> tuple[str, str | None]:
    """Connect to ``spec.url``, :func:`setup_stream`, close; its line, and the
    :func:`purge_warning` of the server it reached (ExportError for a broker that
    cannot be reached or refuses the user)."""

    async def main() -> tuple[str, str | None]:
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
            line = await setup_stream(nc, spec)
            return line, purge_warning(server_version(nc), spec.stream)
        finally:
            await nc.close()

    return asyncio.run(main())


__all__ = ["PURGE_FIXED", "StreamSpec", "purge_exposed", "purge_warning", "run_setup",
           "setup_stream", "stream_config"]  # fmt: skip
