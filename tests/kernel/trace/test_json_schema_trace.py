"""A mixed real trace (exec, open, a slow syscall, fork, exit, a TCP connection) writes
only ``--json`` lines that validate against the committed schema
(docs/trace-events.schema.json), with the fields docs/schema.md names."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.json_schema import check_lines
from tests.helpers.trace import Trace, told_json, unique_comm

pytestmark = pytest.mark.kernel

#: The workload: name itself, open a file, sleep 50 ms (a slow clock_nanosleep), fork a
#: child that exits 3, exec /bin/true, connect to its own listener on 127.0.0.1.
_WORK = r"""
import ctypes, os, socket, subprocess, sys, time
assert ctypes.CDLL(None).prctl(15, sys.argv[1].encode(), 0, 0, 0) == 0
os.close(os.open(sys.argv[2], os.O_RDONLY))
time.sleep(0.05)
child = os.fork()
if child == 0:
    os._exit(3)
os.waitpid(child, 0)
subprocess.run(["/bin/true"], check=True)
srv = socket.create_server(("127.0.0.1", 0))
cli = socket.create_connection(srv.getsockname())
conn, _ = srv.accept()
cli.sendall(b"x" * 100)
assert conn.recv(100)
cli.close(); conn.close(); srv.close()
print(os.getpid(), child, flush=True)
"""


def test_a_mixed_trace_writes_only_lines_of_the_schema(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_text("x")
    comm = unique_comm()
    trace = Trace("--json", "--events", "exec,open,syscalls,tcp", "--slow-ms", "20")
    try:
        done = subprocess.run([sys.executable, "-c", _WORK, comm, str(target)],
                              capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    finally:
        trace.signal(signal.SIGINT)
        lines, err = trace.finish()  # finish checks every line against the schema too
    pid, child = map(int, done.stdout.split())
    objs = check_lines(lines)
    assert told_json(err)[0]["type"] == "start"
    mine = [o for o in objs if o.get("pid") in (pid, child)]
    types = {o["type"] for o in mine}
    assert {"open", "syscall", "fork", "exit", "tcp"} <= types, types
    assert any(o["type"] == "exec" and o["filename"] == "/bin/true" for o in objs)
    fork = next(o for o in mine if o["type"] == "fork" and o["child_pid"] == child)
    assert fork["child_comm"] == comm
    assert any(o["type"] == "exit" and o["pid"] == child and o["exit_code"] == 3 for o in mine)
    slow = [o for o in mine if o["type"] == "syscall" and o["comm"] == comm]
    assert any(o["latency_us"] >= 20_000 for o in slow), slow  # microseconds
    assert objs[-1]["type"] == "summary"
