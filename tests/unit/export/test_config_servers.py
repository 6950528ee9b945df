"""``--export`` / ``collect`` with a cluster's servers, comma-separated: each URL is
checked, nats-py gets them all, the stream's replicas follow the number of servers."""

from __future__ import annotations

import argparse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ringtool.cli.export_args import add_export_args
from ringtool.errors import ExportError
from ringtool.export.config import check_url, connect_options, default_replicas
from ringtool.export.trace_hook import export_config

THREE = "nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224"


def test_a_list_of_servers_is_one_url_each() -> None:
    assert check_url(THREE) == THREE
    opts = connect_options(THREE, None, None, 2.0)
    assert opts["servers"] == THREE.split(",")
    assert opts["allow_reconnect"] is False  # ringtool reconnects itself, to any of them


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("nats://a:1,,nats://b:2", "server 2 of the list is empty"),
        ("nats://a:1,", "server 2 of the list is empty"),
        ("nats://a:1,http://b:2", "must start with nats:// or tls://"),
        ("nats://a:1,nats://b:99999", "a number from 1 to 65535"),
    ],
)
def test_a_bad_server_in_the_list_is_named(text: str, why: str) -> None:
    with pytest.raises(ExportError, match=why):
        check_url(text)


def test_a_password_in_a_list_is_never_shown() -> None:
    with pytest.raises(ExportError) as exc:
        check_url("nats://u:hunter22@a:1,nats://u:hunter22@b:0")
    assert "hunter22" not in str(exc.value) and "u:***@" in str(exc.value)


def test_credentials_and_tls_of_a_list() -> None:
    opts = connect_options("nats://a:1,nats://u:p%40ss@b:2", None, None, 2.0)
    assert (opts["user"], opts["password"]) == ("u", "p@ss")
    assert opts["servers"] == ["nats://a:1", "nats://b:2"]  # no password in the pool
    assert "tls" in connect_options("nats://a:1,tls://b:2", None, None, 2.0)


def test_replicas_follow_the_number_of_servers() -> None:
    assert default_replicas("nats://a:1") == 1
    assert default_replicas("nats://a:1,nats://b:1") == 1  # R2 has no quorum with one down
    assert default_replicas(THREE) == 3
    assert default_replicas(THREE + ",nats://d:1,nats://e:1") == 3
    assert default_replicas("nats://a:1,nats://a:1,nats://a:1") == 1  # one server thrice


def _parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_export_args(p)
    return p.parse_args(list(argv))


def test_export_replicas_flag() -> None:
    cfg = export_config(_parse("--export", THREE))
    assert cfg is not None and cfg.stream_replicas == 3
    cfg = export_config(_parse("--export", THREE, "--export-replicas", "1"))
    assert cfg is not None and cfg.stream_replicas == 1
    cfg = export_config(_parse("--export", "nats://a:1", "--export-replicas", "5"))
    assert cfg is not None and cfg.stream_replicas == 5


@pytest.mark.parametrize("bad", ["0", "6", "x", "-1", "2.5"])
def test_bad_export_replicas_is_a_usage_error(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        _parse("--export", THREE, "--export-replicas", bad)
    assert exc.value.code == 2
    assert "--export-replicas" in capsys.readouterr().err


_HOST = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)
_URL = st.builds(lambda s, h, p: f"{s}://{h}:{p}", st.sampled_from(["nats", "tls"]), _HOST,
                 st.integers(1, 65535))  # fmt: skip


@given(st.lists(_URL, min_size=1, max_size=6))
def test_any_list_of_good_urls_reaches_nats_py_whole(urls: list[str]) -> None:
    text = ",".join(urls)
    assert check_url(text) == text
    assert connect_options(text, None, None, 2.0)["servers"] == urls
