"""A local HTTP exchange of a known size for the dashboard's network tests:
``python -m tests.helpers.http_workload serve COMM BYTES`` names itself COMM and serves
a body of BYTES bytes (``x`` each) from a single-threaded ``http.server`` on 127.0.0.1,
a port of its own, printing ``port N`` once it listens; ``python -m
tests.helpers.http_workload fetch COMM PORT BYTES PAUSE`` names itself COMM and fetches
it over a new connection every PAUSE seconds (HTTP/1.0: one request each), checking
the length, until killed. :class:`HttpExchange` runs both."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from tests.helpers.tcp_workload import _name


def serve(comm: str, size: int) -> None:
    _name(comm)
    body = b"x" * size

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


def fetch(comm: str, port: int, size: int, pause: float) -> None:
    _name(comm)
    while True:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as r:
            assert len(r.read()) == size
        time.sleep(pause)


class HttpExchange:
    """The server (comm ``server_comm``, a body of ``size`` bytes) and a client (comm
    ``client_comm``) fetching it every ``pause`` s; :meth:`stop` kills both."""

    def __init__(self, server_comm: str, client_comm: str, size: int, pause: float) -> None:
        from tests.helpers.paths import PY, ROOT

        mod = "tests.helpers.http_workload"
        self.server = subprocess.Popen([PY, "-m", mod, "serve", server_comm, str(size)],
                                       cwd=ROOT, stdout=subprocess.PIPE, text=True)  # fmt: skip
        self.client: subprocess.Popen[str] | None = None
        try:
            assert self.server.stdout is not None
            word, port = self.server.stdout.readline().split()
            assert word == "port"
            self.client = subprocess.Popen([PY, "-m", mod, "fetch", client_comm, port, str(size),
                                            str(pause)], cwd=ROOT)  # fmt: skip
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for proc in (self.client, self.server):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(10)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        fetch(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
