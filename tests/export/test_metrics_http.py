"""``--metrics``: the endpoint's cost is bounded. Hundreds of idle and half-sent
connections (a slowloris) cost no threads, the oldest are closed to admit new ones,
and a real ``urllib`` scrape still gets the prometheus-client exposition. Also: a
port alone listens on 127.0.0.1 only."""

from __future__ import annotations

import socket
import threading
import urllib.request
from collections.abc import Iterator

import pytest

from ringtool.cli.validate import addr_port as parse_addr_port
from ringtool.export import metrics_http
from ringtool.export.metrics import Families, MetricsServer

FLOOD = 400


def _build(fams: Families) -> None:
    fams.add("counter", "ringtool_events", "test", ("host",), [(("h",), 7)])


@pytest.fixture
def server() -> Iterator[MetricsServer]:
    srv = MetricsServer(("127.0.0.1", 0), _build)
    try:
        yield srv
    finally:
        srv.close()


def _scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        assert r.status == 200
        return str(r.read().decode())


def test_a_port_alone_listens_on_loopback_only() -> None:
    assert parse_addr_port("9464") == ("127.0.0.1", 9464)
    assert parse_addr_port(":9464") == ("127.0.0.1", 9464)
    assert parse_addr_port("0.0.0.0:9464") == ("0.0.0.0", 9464)
    assert parse_addr_port("[::1]:9464") == ("::1", 9464)


def test_a_flood_of_slow_connections_costs_no_threads(server: MetricsServer) -> None:
    assert 'ringtool_events_total{host="h"} 7.0' in _scrape(server.port)
    threads_before = threading.active_count()
    socks = []
    try:
        for i in range(FLOOD):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            if i % 2:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # never finished
            socks.append(s)
        # a normal scrape still answers while all of them are open
        assert 'ringtool_events_total{host="h"} 7.0' in _scrape(server.port)
        assert threading.active_count() == threads_before
        assert server._server.connections() <= metrics_http.MAX_CONNECTIONS
        assert server._server.evicted >= FLOOD - metrics_http.MAX_CONNECTIONS
    finally:
        for s in socks:
            s.close()


def test_a_half_sent_request_times_out(
    monkeypatch: pytest.MonkeyPatch, server: MetricsServer
) -> None:
    monkeypatch.setattr(metrics_http, "IDLE_TIMEOUT", 0.2)
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\n")
        assert s.recv(100) == b""  # closed by the server, not answered
    assert server._server.timed_out >= 1


def test_a_request_head_too_long_is_refused(server: MetricsServer) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * (metrics_http.MAX_REQUEST + 10))
        assert s.makefile("rb").readline().startswith(b"HTTP/1.0 431")


def test_other_paths_and_methods(server: MetricsServer) -> None:
    for req, status in (
        (b"GET /nope HTTP/1.0\r\n\r\n", b"404"),
        (b"POST / HTTP/1.0\r\n\r\n", b"405"),
        (b"HEAD /metrics HTTP/1.0\r\n\r\n", b"200"),
    ):
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as s:
            s.sendall(req)
            assert s.makefile("rb").readline().split()[1] == status
