"""Which nats-server versions ``export-stream`` warns about: those whose account purge
answers a request from any account (before 2.10.27, and 2.11.0: CVE-2025-30215)."""

from __future__ import annotations

import pytest

from ringtool.export.stream_setup import purge_exposed, purge_warning


@pytest.mark.parametrize(
    ("version", "exposed"),
    [("2.2.0", True), ("2.9.10", True), ("2.10.26", True), ("2.10.27", False),
     ("2.11.0", True), ("2.11.0-RC.1", True), ("2.11.1", False), ("2.12.3", False),
     ("3.0.0", False), ("", False), ("2.x.1", False), ("2.10", False)],
)  # fmt: skip
def test_versions(version: str, exposed: bool) -> None:
    assert purge_exposed(version) is exposed
    warning = purge_warning(version, "RINGTOOL")
    assert (warning is not None) is exposed
    if warning:
        assert warning.startswith(f"nats-server {version} deletes every stream")
        assert warning.isprintable()
