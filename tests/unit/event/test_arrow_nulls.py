"""The columns of nulls ``RecordSchema.to_arrow`` keeps for the next batch of as many rows
(ringtool/event/arrow_records.py): a batch's columns are the same whatever batches the
schema converted before it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ringtool.event.arrow_records import RecordSchema
from ringtool.event.records import Records
from tests.helpers.recordings import LAYOUT, OFFSET_NS, batch


@settings(max_examples=100, deadline=None)
@given(st.lists(batch.filter(len), min_size=2, max_size=5))
def test_a_batch_s_columns_do_not_depend_on_the_batches_before(batches) -> None:  # type: ignore[no-untyped-def]
    shared = RecordSchema(LAYOUT)
    for b in batches:
        for n in range(1, len(b.events) + 1):  # batches of one size after another
            part = Records(b.events[:n], b.net)
            got = shared.to_arrow(part, OFFSET_NS)
            got.validate(full=True)
            assert got.equals(RecordSchema(LAYOUT).to_arrow(part, OFFSET_NS))
