"""The cost panel's program names: the hook each BCC function is attached to."""

from __future__ import annotations

from ringtool.trace.reading.cost import program_label


def test_tracepoint_and_raw_tracepoint_names() -> None:
    assert program_label("tracepoint__syscalls__sys_enter_openat") == "syscalls:sys_enter_openat"
    assert program_label("raw_tracepoint__sys_exit") == "raw_syscalls:sys_exit"
    assert program_label("kprobe__tcp_connect") == "kprobe__tcp_connect"


def test_raw_tracepoints_of_the_scheduler_and_others() -> None:
    assert program_label("raw_tracepoint__sched_switch") == "sched:sched_switch"
    assert program_label("raw_tracepoint__sched_wakeup_new") == "sched:sched_wakeup_new"
    assert program_label("raw_tracepoint__block_rq_issue") == "raw:block_rq_issue"
