"""The bridge's events (docs/kmes.md 12.1) decode with the names ``ringtool trace``
gives the same things (docs/schema.md): the process is ``pid``, the thread ``tid``."""

from __future__ import annotations

import struct

from ringtool.event.fields import FIELD_NAMES
from ringtool.kmes.events import EVENT_EXEC, EVENT_EXIT, decode


def test_exec_and_exit_name_the_process_pid_and_the_thread_tid() -> None:
    # a thread 4243 of process 4242 execs (it was thread 4243 before): bpf/kmes_bridge.c
    exec_payload = struct.pack("<IIII16s128s", 4243, 4242, 4243, 1000, b"true", b"/bin/true")
    name, fields = decode(EVENT_EXEC, exec_payload)
    assert name == "exec"
    assert fields == {"pid": 4242, "tid": 4243, "old_tid": 4243, "uid": 1000, "comm": "true",
                      "filename": "/bin/true"}  # fmt: skip
    name, fields = decode(EVENT_EXIT, struct.pack("<IIiI16s", 4242, 4242, 120, 0, b"true"))
    assert name == "exit" and fields is not None and fields["pid"] == fields["tid"] == 4242
    # every name the trace also has means what it means there
    shared = {"pid", "tid", "uid", "comm", "filename"}
    assert shared <= set(FIELD_NAMES) and "tgid" not in fields
