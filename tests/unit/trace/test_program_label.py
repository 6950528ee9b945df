"""The cost panel's program names: the hook each BCC function is attached to."""

from __future__ import annotations

from ringtool.trace.reading.cost import program_label


def test_tracepoint_and_raw_tracepoint_names() -> None:
    assert program_label("tracepoint__syscalls__sys_enter_openat") == "syscalls:sys_enter_openat"
    assert program_label("raw_tracepoint__sys_exit") == "raw_syscalls:sys_exit"
    assert program_label("kprobe__tcp_connect") == "kprobe__tcp_connect"
