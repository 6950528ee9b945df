"""Recordings for tests: random batches of every record form (events of every type,
tcp records viewed as their own struct, net packets with their bytes) as hypothesis
strategies, and a recording file written from batches with the product's writer."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from ringtool.event.arrow_records import RecordSchema
from ringtool.event.decode import Decoder
from ringtool.event.exec_data import stored_count
from ringtool.event.layout import load_layout
from ringtool.event.recording import STATS, SUMMARY, RecordingWriter, layout_meta
from ringtool.event.records import NetRecords, Records
from tests.helpers.net_records import raw_sample
from tests.helpers.records import record, record_array

LAYOUT = load_layout()
SCHEMA = RecordSchema(LAYOUT)
TCP = LAYOUT.type_id("tcp")
EXEC = LAYOUT.type_id("exec")
OFFSET_NS = 1_763_000_000 * 10**9

#: A tcp record: every byte of its struct random (its pad zero: not data), as the rings
#: hold it (a ``struct trace_event`` row).
tcp_row = st.binary(min_size=LAYOUT.event.itemsize, max_size=LAYOUT.event.itemsize)


def _tcp(raws: list[bytes]) -> np.ndarray[Any, Any]:
    arr = np.frombuffer(b"".join(raws), LAYOUT.event).copy() if raws else np.zeros(0, LAYOUT.event)
    view = arr.view(LAYOUT.views[TCP])
    view["h"]["type"] = TCP
    view["pad"] = 0
    return arr


def _batch(events: list[tuple[Any, ...]], tcps: list[bytes], order: list[int],
           samples: list[bytes]) -> Records:  # fmt: skip
    arr = np.concatenate((record_array(events), _tcp(tcps)))
    arr = arr[np.argsort(np.array(order[: len(arr)] + list(range(len(order), len(arr))),
                                  dtype=np.int64), kind="stable")]  # fmt: skip
    dec = Decoder(LAYOUT, realtime_offset_ns=OFFSET_NS)
    net = dec.net_records([(0, s) for s in samples]) if samples else NetRecords.empty(LAYOUT.net)
    return Records(arr, net)


#: One batch: events (unknown types too), tcp records mixed in among them, packets.
batch = st.builds(
    _batch,
    st.lists(record, max_size=8),
    st.lists(tcp_row, max_size=3),
    st.lists(st.integers(0, 20), max_size=11),
    st.lists(raw_sample, max_size=4),
)


class _Kept(io.BytesIO):
    """A buffer the writer's close leaves readable."""

    def close(self) -> None:
        pass


def write_recording(batches: list[Records], *, summary: dict[str, Any] | None = None,
                    close: bool = True) -> bytes:  # fmt: skip
    """The bytes of a recording of ``batches`` (a ``stats`` message after each, the
    ``summary`` at the end unless None), closed (its end marker) when ``close``."""
    messages: list[Records | tuple[str, dict[str, Any]]] = []
    for i, b in enumerate(batches):
        messages += [b, (STATS, {"type": "stats", "events": i})]
    if summary is not None:
        messages.append((SUMMARY, summary))
    return write_messages(messages, close=close)


def write_messages(messages: list[Records | tuple[str, dict[str, Any]]], *,
                   close: bool = True) -> bytes:  # fmt: skip
    """The bytes of a recording of ``messages`` in order: batches of records and
    accounting messages ``(kind, body)``; closed (its end marker) when ``close``."""
    f = _Kept()
    meta = {**layout_meta(), "host": "test", "realtime_offset_ns": str(OFFSET_NS),
            "run_id": "r", "part": "1"}  # fmt: skip
    w = RecordingWriter(f, SCHEMA, meta, OFFSET_NS)
    for m in messages:
        if isinstance(m, Records):
            w.write(m)
        else:
            w.account(*m)
    if close:
        w.close()  # the end marker (the stream stays readable)
    return f.getvalue()


def opens(pid: int, comm: str, ts_ns: list[int], cpu: int = 0) -> Records:
    """A batch of ``open`` records of process ``pid`` named ``comm``, one at each
    timestamp, on ``cpu``."""
    arr = np.zeros(len(ts_ns), LAYOUT.event)
    h = arr["h"]
    h["type"], h["ts"], h["cpu"], h["pid"], h["tid"] = LAYOUT.type_id("open"), ts_ns, cpu, pid, pid
    h["comm"] = comm.encode()
    arr["data"] = b"/etc/hostname"
    return Records(arr)


def timed_recording(tmp: Path, start_ns: int = 5_000 * 10**9) -> tuple[Path, dict[str, Any]]:
    """A recording of a run that started (read from) at ``start_ns``: processes
    ``rpl_0`` .. ``rpl_4`` (pids 100..104), ``rpl_K`` opening 10*(K+1) files (on CPU
    K % 2) a millisecond apart in a batch whose newest is at K+1 s, read just before
    that second's tick (its recorded time); a stats line every second (4 drops on CPU 0 in the third
    interval, 3 more in the fourth; 2 lost on CPU 1 in the fifth), the summary at
    5.2 s. Its path and its summary."""
    messages: list[Records | tuple[str, dict[str, Any]]] = []
    drops, lost = [0, 0, 4, 7, 7], [0, 0, 0, 0, 2]
    for k in range(5):
        at = start_ns + (k + 1) * 10**9
        n = 10 * (k + 1)
        messages.append(opens(100 + k, f"rpl_{k}", [at - i * 10**6 for i in range(n)][::-1], k % 2))
        per_cpu = [{"cpu": 0, "fill_pct": 1.0, "drops": drops[k], "lost": 0},
                   {"cpu": 1, "fill_pct": 2.0, "drops": 0, "lost": lost[k]}]  # fmt: skip
        line = {"type": "stats", "uptime_s": k + 1.0, "per_cpu": per_cpu, "dropped": drops[k],
                "lost": lost[k]}  # fmt: skip
        messages.append((STATS, line))
    summary = {"type": "summary", "events": 150, "dropped": 7, "lost": 2, "malformed": 0,
               "duration_s": 5.2, "by_type": {"open": 150}, "dropped_by_source": {"open": 7},
               "dropped_by_source_per_cpu": {"open": [7, 0]}, "dropped_per_cpu": [7, 0],
               "lost_per_cpu": {"1": 2}, "drop_intervals": 3, "drops_at": [],
               "sources": ["open"]}  # fmt: skip
    messages.append((SUMMARY, summary))
    return save(tmp, write_messages(messages)), summary


def write_format1(batches: list[Records], summary: dict[str, Any]) -> bytes:
    """A recording as ringtool wrote format 1: each batch's checksum a sum over its
    records (``ringtool.digest``), zstd buffers."""
    from ringtool.event.recording import DIGEST
    from ringtool.event.recording_check import records_digest

    def checked(b: Records) -> dict[bytes, bytes]:
        return {DIGEST: records_digest(recorded(b), SCHEMA).encode()}  # of the records as kept

    return _write_old("1", "zstd", batches, summary, checked)


def write_format2(batches: list[Records], summary: dict[str, Any]) -> bytes:
    """A recording as ringtool wrote format 2: each batch's checksum a sum over its
    columns as Arrow holds them (``ringtool.sum``), LZ4 buffers."""
    from ringtool.event.recording import SUM
    from ringtool.event.recording_check import ColumnsSum

    def checked(b: Records) -> dict[bytes, bytes]:
        return {SUM: ColumnsSum()(SCHEMA.to_arrow(b, OFFSET_NS)).encode()}

    return _write_old("2", "lz4", batches, summary, checked)


def _write_old(fmt: str, compression: str, batches: list[Records], summary: dict[str, Any],
               checked: Callable[[Records], dict[bytes, bytes]]) -> bytes:  # fmt: skip
    """A recording of format ``fmt`` as an older ringtool wrote it: ``checked`` gives
    each batch's custom metadata (its checksum)."""
    import pyarrow as pa
    import pyarrow.ipc as ipc

    from ringtool.event.recording import BODY, KIND

    meta = {**layout_meta(), "ringtool.format": fmt, "host": "old",
            "realtime_offset_ns": str(OFFSET_NS), "run_id": "r", "part": "1"}  # fmt: skip
    sink = pa.BufferOutputStream()
    w = ipc.new_stream(sink, SCHEMA.schema.with_metadata(meta),
                       options=ipc.IpcWriteOptions(compression=compression))  # fmt: skip
    empty = pa.record_batch([pa.array([], f.type) for f in SCHEMA.schema], schema=SCHEMA.schema)
    w.write_batch(empty, custom_metadata={KIND: b"start", BODY: b"{}"})
    for b in batches:
        w.write_batch(SCHEMA.to_arrow(b, OFFSET_NS), custom_metadata=checked(b))
    w.write_batch(empty, custom_metadata={KIND: b"summary", BODY: json.dumps(summary).encode()})
    w.close()
    return bytes(sink.getvalue())


def _strings_end(raw: bytes, nuls: int) -> int:
    """Where a ``data`` value's strings end: before its ``nuls``-th NUL (0: after its
    last non-NUL byte, as when it has fewer)."""
    at = -1
    for _ in range(nuls):
        at = raw.find(b"\0", at + 1)
        if at < 0:
            break
    return at if nuls and at >= 0 else len(raw.rstrip(b"\0"))


def recorded(records: Records) -> Records:
    """``records`` as a recording keeps them (docs/record.md): each event's ``data``
    its strings, the bytes after them zeroed (the rest of a ring slot: stale); an
    exec's the filename and its stored arguments (``aux2``), another type's its first
    string, a type the layout does not name to its last non-NUL byte; but a named
    type's ``data_len`` where it holds (below ``TRACE_DATA_LEN``, a NUL there: what
    the BPF programs store); rows of a struct of their own (tcp, disk) as they are.
    ``data_len`` is then the length kept (``data``'s own, as a recording has it)."""
    events = records.events.copy()
    known = set(LAYOUT.type_names) - set(LAYOUT.views)
    width = LAYOUT.event["data"].itemsize
    for row in events:
        t = int(row["h"]["type"])
        if t in LAYOUT.views:
            continue
        raw = bytes(row["data"].tobytes()).ljust(width, b"\0")
        stored = int(row["data_len"])
        if t in known and stored < width and raw[stored] == 0:
            end = stored
        else:
            nuls = 1 + stored_count(int(row["aux2"])) if t == EXEC else int(t in known)
            end = _strings_end(raw, nuls)
        row["data"] = raw[:end]
        row["data_len"] = end
    return Records(events, records.net)


def save(tmp: Path, data: bytes, name: str = "r.arrows") -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def samples_of(net: NetRecords) -> list[bytes]:
    return [net.sample(i) for i in range(len(net))]
