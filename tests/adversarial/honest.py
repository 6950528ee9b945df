"""``python -m tests.adversarial.honest SOCK DIR GEN FIN``: the honest reader.

Attaches with the public API (``ringtool.kmes.attach.attach``, new events only), prints
``attached``, then reads until ``DIR/stop`` exists and every pid listed in
``DIR/FIN.json`` has shown its exec and exit (or 8 s after ``stop``). Each event is
checked to be something the bridge writes (``ringtool bridge``'s exec/exit/lost events:
type, origin, payload length, CPU, plausible timestamp, kernel-padded comm); events of
the test's generators (comm GEN and FIN) and forged ones (``advforged``) are listed
with their pids. When
``DIR/phase2`` appears the loss counters are snapshotted. Writes ``DIR/honest.json``;
a crash is reported there as a traceback.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from ringtool.kmes.attach import attach
from ringtool.kmes.reader import wait_any

EXEC = struct.Struct("<IIII16s128s")  # bpf/kmes_bridge.c exec_event after the prefix
EXIT = struct.Struct("<IIiI16s")  # exit_event after the prefix
LOST = struct.Struct("<IIQ")  # source origin_class, reserved, count
#: event_type -> (origin_class, payload lengths) as ringtool bridge writes them; a perf
#: sample's raw data is padded (u32 size + data to 8 bytes): exit payloads are 36 bytes.
SHAPES = {1: (1, {EXEC.size}), 2: (2, {EXIT.size, EXIT.size + 4}), 3: (3, {LOST.size})}
FORGED = "advforged"  # what hostile.py writes into exec events it can reach


def stats_dict(stats: Any) -> dict[str, int]:
    if dataclasses.is_dataclass(stats) and not isinstance(stats, type):
        return {k: v for k, v in dataclasses.asdict(stats).items() if isinstance(v, int)}
    return {k: getattr(stats, k) for k in dir(stats) if isinstance(getattr(stats, k), int)}


def counted_missing(stats: dict[str, int]) -> int:
    """Events the reader says it did not deliver (sequence numbers it skipped)."""
    return stats.get("lapped_events", 0) + stats.get("gap_events", 0)


def comm_ok(raw: bytes) -> str | None:
    """The comm if it is shaped as the kernel pads it (NUL, then only NULs)."""
    if b"\0" not in raw:
        return None
    name, rest = raw.split(b"\0", 1)
    if rest.strip(b"\0"):
        return None
    return name.decode("utf-8", "replace")


class Checker:
    def __init__(self, t0_ns: int, comms: set[str]) -> None:
        self.t0 = t0_ns
        self.comms = comms | {FORGED}
        self.bad: list[str] = []
        self.nbad = 0
        self.gen: list[tuple[str, str, int]] = []
        self.lost = 0

    def fail(self, why: str, ev: Any) -> None:
        self.nbad += 1
        if len(self.bad) < 20:
            self.bad.append(
                f"{why}: type {ev.event_type} origin {ev.origin_class} "
                f"cpu {ev.cpu_id} seq {ev.seq} payload {ev.payload[:48].hex()}"
            )

    def check(self, ev: Any, cpu: int) -> None:
        shape = SHAPES.get(ev.event_type)
        if shape is None or shape[0] != ev.origin_class or len(ev.payload) not in shape[1]:
            return self.fail("not a bridge event shape", ev)
        if ev.cpu_id != cpu:
            return self.fail(f"cpu_id != buffer cpu {cpu}", ev)
        if not self.t0 - 600 * 10**9 <= ev.timestamp <= time.time_ns() + 5 * 10**9:
            return self.fail("timestamp out of range", ev)
        if ev.event_type == 3:
            source, res, count = LOST.unpack(ev.payload)
            if source not in (1, 2) or res or count <= 0:
                return self.fail("bad lost notice", ev)
            self.lost += count
            return None
        if ev.event_type == 1:
            pid, tgid, _old, _uid, raw, _fn = EXEC.unpack(ev.payload)
            name = "exec"
        else:
            pid, tgid, prio, _uid, raw = EXIT.unpack_from(ev.payload)
            name = "exit"
            if not -1 <= prio <= 139:
                return self.fail("exit prio out of range", ev)
        comm = comm_ok(raw)
        if comm is None or pid <= 0 or tgid <= 0:
            return self.fail("comm/pid not as the kernel writes them", ev)
        if comm in self.comms:
            self.gen.append((name, comm, pid))
        return None


def final_done(d: Path, fin: str, gen: list[tuple[str, str, int]]) -> bool:
    f = d / f"{fin}.json"
    if not f.exists():
        return False
    want = set(json.loads(f.read_text()))
    seen_exec = {p for n, c, p in gen if c == fin and n == "exec"}
    seen_exit = {p for n, c, p in gen if c == fin and n == "exit"}
    return want <= seen_exec and want <= seen_exit


def run(sock: str, d: Path, gen: str, fin: str, out: dict[str, Any]) -> None:
    chk = Checker(time.time_ns(), {gen, fin})
    readers = attach(sock, start="head")
    print("attached", flush=True)
    cpus: dict[int, dict[str, Any]] = {
        r.cpu: {"first": r.last_seq, "n": 0, "bad_order": 0, "order": []} for r in readers
    }
    prev = {r.cpu: r.last_seq for r in readers}
    out["cpus"] = cpus
    stop_at: float | None = None
    phase2: dict[int, tuple[int, int]] | None = None
    try:
        while True:
            for r in readers:
                for ev in r.drain():
                    c = cpus[r.cpu]
                    c["n"] += 1
                    if ev.seq <= prev[r.cpu]:
                        c["bad_order"] += 1
                        if len(c["order"]) < 10:
                            c["order"].append([prev[r.cpu], ev.seq])
                    prev[r.cpu] = max(prev[r.cpu], ev.seq)
                    chk.check(ev, r.cpu)
            if phase2 is None and (d / "phase2").exists():
                phase2 = {r.cpu: (counted_missing(stats_dict(r.stats)), chk.lost) for r in readers}
            if stop_at is None and (d / "stop").exists():
                stop_at = time.monotonic()
            if stop_at is not None and (
                final_done(d, fin, chk.gen) or time.monotonic() - stop_at > 8
            ):
                break
            wait_any(readers, timeout=0.1)
    finally:
        for r in readers:
            c = cpus[r.cpu]
            c["last"] = r.last_seq
            c["stats"] = stats_dict(r.stats)
            if phase2 is not None:
                c["missing_after_phase2"] = counted_missing(c["stats"]) - phase2[r.cpu][0]
        out.update(
            bad=chk.bad,
            nbad=chk.nbad,
            gen=chk.gen,
            lost=chk.lost,
            lost_after_phase2=chk.lost - (min(v[1] for v in phase2.values()) if phase2 else 0),
        )
        for r in readers:
            r.close()


def main(sock: str, dirpath: str, gen: str, fin: str) -> None:
    d = Path(dirpath)
    out: dict[str, Any] = {"error": None}
    try:
        run(sock, d, gen, fin, out)
    except BaseException:
        out["error"] = traceback.format_exc()
    tmp = d / "honest.json.tmp"
    tmp.write_text(json.dumps(out))
    tmp.rename(d / "honest.json")


if __name__ == "__main__":
    main(*sys.argv[1:5])
