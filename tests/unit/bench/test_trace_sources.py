"""``bench trace``'s per-source cost: a summary's programs and events grouped by the
source that loaded them (hand-built summaries: no kernel)."""

from __future__ import annotations

from ringtool.bench.trace_sources import per_source


def _prog(program: str, runs: int, ns: int) -> dict[str, object]:
    return {"program": program, "id": 1, "name": "x", "run_cnt": runs, "run_time_ns": ns}


def test_programs_and_events_grouped_by_source() -> None:
    summary = {
        "cost": {"programs": [
            _prog("disk block:block_rq_issue", 10, 5_000),
            _prog("disk block:block_rq_complete", 10, 9_000),
            _prog("exec sched:sched_process_exec", 3, 3_000),
            _prog("exec sched:sched_process_fork", 2, 1_000),
        ]},
        "by_type": {"disk": 10, "exec": 3, "fork": 2, "exit": 1, "open": 7},
    }  # fmt: skip
    assert per_source(summary) == {
        "disk": {"programs": 2, "runs": 20, "run_time_ns": 14_000, "events": 10},
        # exec, exit and fork are all the exec source's; open loaded no program here
        "exec": {"programs": 2, "runs": 5, "run_time_ns": 4_000, "events": 6},
    }


def test_a_summary_without_cost_has_no_sources() -> None:
    assert per_source({"by_type": {"open": 3}}) == {}
