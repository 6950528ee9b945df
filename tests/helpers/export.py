"""``trace --export`` runs for the export tests: a traced workload of real opens, the
run's end (summary, notes) and waiting until the exporter caught up."""

from __future__ import annotations

import json
import signal
import tempfile
import time
from pathlib import Path

from tests.helpers.procs import Lines
from tests.helpers.servers import NatsServer
from tests.helpers.trace import Trace, Worker, hot_file, unique_comm


def start_trace(server: NatsServer, comm: str, *extra: str) -> Trace:
    """``trace --json --stats`` of ``comm``'s opens, exporting as host h1 (rings of 8 MiB per
    CPU: the workload must not overflow them while the test runs alongside)."""
    return Trace("--json", "--stats", "-c", comm, "--events", "open", "--interval", "0.5",
                 "--buffer-pages", "2048", "--export", server.url, "--host-name", "h1",
                 *extra)  # fmt: skip


def work(comm: str, target: Path, n: int) -> None:
    w = Worker(comm, "open", target, n)
    w.go()
    w.wait()


def finish(trace: Trace) -> tuple[dict, list[str], str]:  # type: ignore[type-arg]
    trace.signal(signal.SIGINT)
    out, err = trace.finish()
    summary = json.loads(out[-1])
    assert summary["type"] == "summary"
    return summary, out, err


def notes(out: list[str]) -> list[str]:
    return [json.loads(line)["text"] for line in out if '"type": "note"' in line]


def wait_exported(trace: Trace, generated: int, timeout: float = 60) -> None:
    """Until a stats line shows all ``generated`` events delivered or dropped by the
    kernel, and none of them still waiting in the exporter."""
    deadline = time.monotonic() + timeout
    while True:
        for line in reversed(list(trace.err_lines)):  # stats: stderr
            if '"type": "stats"' in line:
                s = json.loads(line)
                seen = s["events"] + s["dropped"] + s["lost"]
                if seen >= generated and s["export"]["export_pending"] == 0:
                    return
                break
        assert time.monotonic() < deadline, f"the exporter did not catch up: {trace.err_lines[-1:]}"
        time.sleep(0.1)


def exported_run(server: NatsServer, tmp_path: Path, n: int, *extra: str) -> tuple[Trace, str]:
    """A :func:`start_trace` run (``extra`` flags) of ``n`` opens by a worker of a fresh
    comm, waited for until exported; the trace (still running) and the comm."""
    comm, target = unique_comm(), hot_file(tmp_path)
    trace = start_trace(server, comm, *extra)
    work(comm, target, n)
    wait_exported(trace, n)
    return trace, comm


class Collect(Lines):
    """``argv`` with stdout lines collected as they come and stderr in a file, read
    with :meth:`stderr` while it runs."""

    def __init__(self, argv: list[str]) -> None:
        self._err = tempfile.TemporaryFile("w+")  # noqa: SIM115 - lives with the process
        super().__init__(argv, stderr=self._err)

    def stderr(self) -> str:
        self._err.seek(0)
        return self._err.read()

    def stop(self) -> str:
        """Ctrl-C; asserts a clean end (status 0, no traceback); its stderr."""
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=60)
        err = self.stderr()
        assert self.proc.returncode == 0, err
        assert "Traceback" not in err, err
        return err
