"""Format 3's checksum (ringtool/event/recording_check.py, ``MessageSum``): the sum of
the bytes a batch's messages hold on disk, put in them in place of ``PENDING``; the
reader finds it, puts ``PENDING`` back and sums again. Any one damaged byte of the
messages, the digits included, is found; a recording's batches carry it where a
standard reader reads their custom metadata."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc
from hypothesis import given
from hypothesis import strategies as st

from ringtool.event.recording import SUM
from ringtool.event.recording_check import PENDING, SUM_DIGITS, MessageSum
from tests.helpers.recordings import opens, write_recording
from tests.helpers.records import SETTINGS


@st.composite
def _messages(draw: st.DrawFn) -> bytearray:  # type: ignore[type-arg]
    """Bytes holding the pending digits as a flatbuffer string, anywhere among others
    (none of which is the digits' string again)."""
    before = draw(st.binary(max_size=200))
    after = draw(st.binary(max_size=200))
    return bytearray(before + SUM_DIGITS.to_bytes(4, "little") + PENDING + b"\0" + after)


@SETTINGS
@given(_messages(), st.data())
def test_any_damaged_byte_of_a_sealed_message_is_found(
    message: bytearray, data: st.DataObject
) -> None:
    at = message.find(SUM_DIGITS.to_bytes(4, "little") + PENDING) + 4
    MessageSum().seal(message)
    digits = bytes(message[at : at + SUM_DIGITS])
    assert digits != PENDING and int(digits, 16) >= 0
    assert MessageSum().check(bytes(message), digits)
    where = data.draw(st.integers(0, len(message) - 1))
    damaged = bytearray(message)
    damaged[where] ^= data.draw(st.integers(1, 255))
    # the digits the reader takes are the metadata's: damaged with them when there
    read = bytes(damaged[at : at + SUM_DIGITS]) if at <= where < at + SUM_DIGITS else digits
    assert not MessageSum().check(bytes(damaged), read)


def test_a_recordings_batches_carry_the_sum_of_their_bytes() -> None:
    data = write_recording([opens(7, "cat", list(range(100, 400))), opens(8, "sh", [5, 6])])
    sums, stream = 0, pa.BufferReader(data)
    reader = ipc.open_stream(stream)
    start = stream.tell()
    while True:
        try:
            rb, custom = reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            break
        end = stream.tell()
        if rb.num_rows:
            digits = dict(custom)[SUM]
            assert len(digits) == SUM_DIGITS
            assert MessageSum().check(data[start:end], digits)
            sums += 1
        start = end
    assert sums == 2
