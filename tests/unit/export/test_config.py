"""``--export URL`` / ``collect URL``: every bad URL is one clear line, never a
traceback, and never shows the password it carries."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.errors import ExportError
from ringtool.export.config import check_url
from tests.helpers.paths import RINGTOOL, ROOT


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("notaurl", "must start with nats:// or tls://"),
        ("http://127.0.0.1:4222", "must start with nats:// or tls://"),
        ("nats://127.0.0.1:99999", "a number from 1 to 65535"),
        ("nats://127.0.0.1:port", "a number from 1 to 65535"),
        ("nats://[::1", "not a URL"),
        ("nats://:4222", "no host"),
        ("nats://127.0.0.1:0", "port 0"),
        ("nats://127.0.0.1:4222/stream?x=1", "no path or query"),
    ],
)
def test_bad_urls_say_what_is_wrong(url: str, why: str) -> None:
    with pytest.raises(ExportError, match=why):
        check_url(url)


def test_good_urls_pass_unchanged() -> None:
    for url in ("nats://127.0.0.1:4222", "tls://broker.example:4443", "nats://u:p@h:1"):
        assert check_url(url) == url


@given(user=st.from_regex(r"[a-z]{1,8}", fullmatch=True),
       password=st.from_regex(r"P[A-Z0-9!$%^&*()]{5,19}", fullmatch=True),
       rest=st.sampled_from([":4222", ":99999", ":4222/x", ":0", ":abc", "/path"]))  # fmt: skip
def test_a_refused_url_never_shows_its_password(user: str, password: str, rest: str) -> None:
    url = f"nats://{user}:{password}@" + ("" if rest.startswith(":0") else "h") + rest
    try:
        check_url(url)
    except ExportError as exc:
        assert password not in str(exc)
        assert f"{user}:***@" in str(exc)


@given(st.text(max_size=60))
def test_any_text_is_accepted_or_refused_with_export_error(text: str) -> None:
    try:
        assert check_url(text) == text
    except ExportError:
        pass


def test_cli_prints_one_line() -> None:
    p = subprocess.run([*RINGTOOL, "collect", "nats://bob:hunter22@:4222", "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr, p.stderr
    assert "hunter22" not in p.stderr and "no host" in p.stderr
