"""The pipes to and from the publisher process: frames and the merged counters."""

from __future__ import annotations

import os

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from ringtool.export.accounting import REASONS, ExportCounters
from ringtool.export.proc_wire import add_lists, frame, merge, read_frame, write_all
from ringtool.export.wire import Batch


def test_frames_round_trip_a_batch_and_end_cleanly() -> None:
    rows = np.arange(12, dtype=np.uint64)
    r, w = os.pipe()
    try:
        write_all(w, frame(("batch", Batch(3, "open", 7, 12, rows, rows.nbytes))))
        write_all(w, frame(("note", "hello")))
        os.close(w)
        kind, batch = read_frame(r)  # type: ignore[misc]
        assert kind == "batch" and (batch.cpu, batch.first, batch.count) == (3, 7, 12)
        assert (batch.data == rows).all()
        assert read_frame(r) == ("note", "hello")
        assert read_frame(r) is None
    finally:
        os.close(r)


def test_a_frame_cut_short_is_the_end() -> None:
    data = frame(("note", "x" * 100))
    r, w = os.pipe()
    os.write(w, data[:-10])
    os.close(w)
    try:
        assert read_frame(r) is None
    finally:
        os.close(r)


@given(
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(1, 100), st.sampled_from(REASONS)), max_size=20
    ),
    st.lists(st.tuples(st.integers(0, 5), st.integers(1, 100), st.booleans()), max_size=20),
)
def test_merge_is_one_process_counts(
    own: list[tuple[int, int, str]], child: list[tuple[int, int, bool]]
) -> None:
    """The parent's drops plus the child's acks and drops are what one set of counters
    would hold: ``exported + export_dropped + export_pending`` is every event handed."""
    parent, kid, one = ExportCounters(2), ExportCounters(2), ExportCounters(2)
    for cpu, n, reason in own:  # dropped by the trace's side (queue_full, died, ...)
        for c in (parent, one):
            c.hand(cpu, n)
            c.drop(cpu, n, reason)
    for cpu, n, acked in child:  # handed to the child, which acks or drops them
        parent.hand(cpu, n)
        for c in (kid, one):
            c.hand(cpu, n)
            if acked:
                c.acked(cpu, n, 10 * n, duplicate=False)
            else:
                c.drop(cpu, n, "refused")
    got = merge(parent.snapshot(), kid.snapshot(), sum(parent.handed))
    want = one.snapshot()
    for key in ("exported", "export_dropped", "export_dropped_by_reason", "export_pending",
                "export_messages", "export_bytes"):  # fmt: skip
        assert got[key] == want[key], key
    assert got["export_pending"] == 0
    n = max(len(got["export_dropped_per_cpu"]), len(want["export_dropped_per_cpu"]))
    for key in ("exported_per_cpu", "export_dropped_per_cpu"):
        assert add_lists([0] * n, got[key]) == add_lists([0] * n, want[key]), key
