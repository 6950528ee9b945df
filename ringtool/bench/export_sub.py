"""The receiving end of ``ringtool bench export``: a plain JetStream subscriber.

Run as ``python -m ringtool.bench.export_sub URL STREAM PREFIX TIMEOUT``: it subscribes
(an ordered push consumer on ``PREFIX.>``), prints ``ready``, and for every event
message records the arrival time (CLOCK_REALTIME) minus each event's time: the
kernel's ``bpf_ktime_get_ns`` stamp moved to wall-clock time with the message's
``Ringtool-Realtime-Offset`` (rows/1), or the ``ts`` of each JSON line (jsonl/1). It
stops at the exporter's ``summary`` message once it holds as many events as that
summary says were exported (or at TIMEOUT), and prints one JSON object: events,
messages, body bytes, latency p50/p99 in ms, and the summary's counts.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from typing import Any

import numpy as np

from ringtool.export import wire as F

_TS = re.compile(rb'"ts": ([0-9.e+-]+)')


class Receiver:
    def __init__(self) -> None:
        self.events = 0
        self.messages = 0
        self.bytes = 0
        self.lat: list[np.ndarray[Any, Any]] = []
        self.summary: dict[str, Any] | None = None
        self.done = asyncio.Event()

    def take(self, headers: dict[str, str], body: bytes) -> None:
        now = time.time_ns()
        fmt = headers.get(F.H_FORMAT)
        if fmt == F.STATS:
            rec = json.loads(body)
            if rec.get("kind") == "summary":
                self.summary = rec
        else:
            first, _, last = headers[F.H_SEQ].partition("-")
            count = int(last) - int(first) + 1
            self.events += count
            self.messages += 1
            self.bytes += len(body)
            if fmt == F.ROWS:
                width = len(body) // count
                rows = np.frombuffer(body, np.uint8).reshape(count, width)
                # h.ts (bpf_ktime_get_ns) is the first field of every record
                ts = rows[:, :8].copy().view("<u8").reshape(count).astype(np.int64)
                ts += int(headers[F.H_CLOCK])
            else:
                ts = (np.array([float(m) for m in _TS.findall(body)]) * 1e9).astype(np.int64)
            self.lat.append(now - ts)
        if self.summary is not None and self.events >= self.summary["exported"]:
            self.done.set()

    def result(self) -> dict[str, Any]:
        lat = np.concatenate(self.lat) / 1e6 if self.lat else np.zeros(1)
        return {"events": self.events, "messages": self.messages, "bytes": self.bytes,
                "p50_ms": round(float(np.percentile(lat, 50)), 2),
                "p99_ms": round(float(np.percentile(lat, 99)), 2),
                "summary": self.summary}  # fmt: skip


async def main(url: str, stream: str, prefix: str, timeout: float) -> None:
    import nats

    recv = Receiver()
    nc = await nats.connect(url)
    js = nc.jetstream()

    async def on_msg(msg: Any) -> None:
        recv.take(msg.headers or {}, msg.data)

    sub = await js.subscribe(f"{prefix}.>", stream=stream, ordered_consumer=True, cb=on_msg)
    print("ready", flush=True)
    try:
        await asyncio.wait_for(recv.done.wait(), timeout)
    except TimeoutError:
        pass
    await sub.unsubscribe()
    await nc.close()
    print(json.dumps(recv.result()), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))
