"""``ringtool trace --csv`` on real BPF: a real process opens files with hostile names
(comma, quote, CR/LF, ESC, bytes that are not UTF-8); the CSV that the csv module
reads back holds each name exactly, and equals what ``--json`` gives for the same
events (two tracers at once, the process pinned to one CPU so both see one order)."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers.paths import RINGTOOL, ROOT

pytestmark = pytest.mark.kernel
FIELDS = "type,pid,tid,comm,path,flags,ret"
NAMES = [b'a,b"c', b"line\r\nbreak", b"esc\x1b[2J", b"bad\xff\xfeutf8", b"plain"]
CHILD = """
import os, select, sys
os.sched_setaffinity(0, {0})
d = os.fsencode(sys.argv[1])
while not select.select([sys.stdin], [], [], 0.05)[0]:  # until the tracers saw a sync
    os.close(os.open(os.path.join(d, b"sync"), os.O_RDONLY))
for name in sys.argv[2:]:
    os.close(os.open(os.path.join(d, os.fsencode(name)), os.O_RDONLY))
"""


class _Tracer:
    """``trace --events open -p PID --fields FIELDS ARGS``, stdout read by a thread."""

    def __init__(self, pid: int, *args: str) -> None:
        self.proc = subprocess.Popen(
            [*RINGTOOL, "trace", "--events", "open", "-p", str(pid), "--fields", FIELDS, *args],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        self.out = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        while chunk := os.read(self.proc.stdout.fileno(), 65536):
            self.out += chunk

    def finish(self) -> str:
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=60)
        self._reader.join(timeout=10)  # the thread reads stdout to its end
        assert self.proc.stderr is not None
        err = self.proc.stderr.read()
        assert self.proc.returncode == 0 and b"Traceback" not in err, err
        return self.out.decode()


def test_csv_of_hostile_names_reads_back_like_json(tmp_path: Path) -> None:
    for name in [*NAMES, b"sync"]:
        os.close(os.open(os.path.join(os.fsencode(tmp_path), name), os.O_CREAT | os.O_WRONLY))
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), *(os.fsdecode(n) for n in NAMES)],
        stdin=subprocess.PIPE,
    )  # fmt: skip
    tracers = [_Tracer(child.pid, "--csv"), _Tracer(child.pid, "--json")]
    try:
        deadline = time.monotonic() + 240  # two compiles at once: minutes when emulated
        while not all(b"/sync" in t.out for t in tracers):  # both attached and reading
            assert all(t.proc.poll() is None for t in tracers), "a tracer ended"
            assert time.monotonic() < deadline, "the tracers saw no open"
            time.sleep(0.05)
        assert child.stdin is not None
        child.stdin.write(b"go\n")
        child.stdin.close()
        assert child.wait(timeout=60) == 0
        time.sleep(1.0)  # the tracers poll their rings; give them a turn
        text, jtext = (t.finish() for t in tracers)
    finally:
        for p in (*(t.proc for t in tracers), child):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert text.startswith(FIELDS + "\r\n")
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    events = [json.loads(line) for line in jtext.splitlines()]
    # stdout: events and the summary only (the start line went to stderr)
    assert events[-1]["type"] == "summary"
    assert {e["type"] for e in events[:-1]} == {"open"}
    prefix = str(tmp_path) + "/"
    ours = [r for r in rows if r["path"].startswith(prefix) and r["path"] != prefix + "sync"]
    names = [r["path"][len(prefix) :] for r in ours]
    assert names == [n.decode("utf-8", "backslashreplace") for n in NAMES]
    assert all(r["pid"] == str(child.pid) and r["type"] == "open" for r in ours)
    assert all(int(r["ret"]) >= 0 for r in ours)
    # the same events as --json gives, field for field, as text
    jours = [e for e in events if e.get("path", "").startswith(prefix) and e["path"] in
             {r["path"] for r in ours}]  # fmt: skip
    assert ours == [{k: str(v) for k, v in ev.items()} for ev in jours]
    assert list(jours[0]) == FIELDS.split(",")  # --fields order in JSON too
