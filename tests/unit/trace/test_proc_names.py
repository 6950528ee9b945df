"""Process names follow exec: the newest record's comm, across batches and CPUs;
packets are counted under NET_LABEL, never as a nameless process."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.layout import load_layout
from ringtool.trace.report.proc_names import NET_LABEL, latest_names
from ringtool.trace.report.stats import TraceStats
from tests.helpers.net_records import net_records, net_sample
from tests.helpers.records import header_records


def _batch(rows: list[tuple[str, int, int, bytes]]) -> np.ndarray:
    """Records ``(type, pid, ts, comm)``."""
    keys = ("type", "pid", "ts", "comm")
    return header_records([dict(zip(keys, row, strict=True)) for row in rows])


def _stats() -> TraceStats:
    return TraceStats(load_layout().type_names, 2, ["exec", "open"])


def test_a_child_that_execs_in_one_batch_is_shown_by_its_new_name() -> None:
    st_ = _stats()
    # a shell's child opens a redirection as "bash", execs cat, opens as "cat", exits
    st_.add_batch(_batch([("open", 11, 100, b"bash"), ("exec", 11, 200, b"cat"),
                          ("open", 11, 300, b"cat"), ("exit", 11, 400, b"cat"),
                          ("open", 10, 50, b"bash")]))  # fmt: skip
    assert sorted(st_.proc_rows()) == [(10, "bash", 1, 0), (11, "cat", 4, 0)]


def test_an_older_batch_read_late_does_not_bring_the_old_name_back() -> None:
    st_ = _stats()
    st_.add_batch(_batch([("exec", 11, 200, b"cat")]))
    st_.add_batch(_batch([("open", 11, 100, b"bash")]))  # another CPU's ring, older
    assert st_.proc_rows() == [(11, "cat", 2, 0)]
    st_.add_batch(_batch([("exec", 11, 300, b"ls")]))
    assert st_.proc_rows() == [(11, "ls", 3, 0)]


def test_packets_are_counted_under_the_net_label() -> None:
    st_ = _stats()
    st_.add_net(net_records([net_sample(cpu=0, pid=0, comm=b"")] * 3))
    assert st_.proc_rows() == [(0, NET_LABEL, 3, 0)]


ROWS = st.tuples(st.integers(1, 5), st.integers(0, 10**6), st.sampled_from([b"a", b"bb"]))


@given(st.lists(ROWS, min_size=1, max_size=40))
def test_latest_names_is_the_newest_record_of_each_pid(
    rows: list[tuple[int, int, bytes]],
) -> None:
    arr = _batch([("open", pid, ts, comm) for pid, ts, comm in rows])
    got = latest_names(arr["h"])
    for pid, n, comm, ts in zip(*got, strict=True):
        mine = [(t, c) for p, t, c in rows if p == pid]
        assert n == len(mine)
        assert ts == max(t for t, _ in mine)
        assert comm in {c for t, c in mine if t == ts}
    assert got.pids == sorted({p for p, _, _ in rows})
