"""A hostile consumer, a socket flood and SIGHUP resizes against one real ``ringtool
bridge``, while an honest reader process keeps reading: no consumer can crash or stall
the bridge or make an honest reader deliver bytes the bridge did not write.

The honest reader (``honest.py``) must end with: no duplicate or out-of-order sequence
number, every skipped sequence number counted, every event shaped as the bridge writes
it, generator events only with the generator's pids (each exec/exit at most once), and,
once the attackers are gone, every event of a last generator batch. The bridge must
survive and keep answering attaches throughout.
"""

from __future__ import annotations

import json
import secrets
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ringtool.kmes.attach import attach
from tests.helpers import rawproto as P
from tests.helpers.kmes import bridge
from tests.helpers.procs import LineReader, child, spawn_execs, stop, wait_json

pytestmark = [pytest.mark.adversarial, pytest.mark.kernel]

STORM = 7.0  # seconds of attack
SIZES = [2 << 20, 1 << 19, 1 << 20]  # SIGHUP resizes cycle through these


def probe_attach(sock: str, problems: list[str], when: str) -> None:
    """A new consumer attaches with the public API and the raw protocol."""
    try:
        readers = attach(sock, timeout=5.0)
        for r in readers:
            r.drain(64)
            r.close()
    except Exception as exc:
        problems.append(f"{when}: attach() failed: {type(exc).__name__}: {exc}")
    try:
        r2 = P.raw_attach(sock, timeout=5.0)
        r2.close()
        if r2.reply.get("version") != 2:
            problems.append(f"{when}: raw attach got version {r2.reply.get('version')}")
    except Exception as exc:
        problems.append(f"{when}: raw attach failed: {type(exc).__name__}: {exc}")


def check_hostile(rep: dict[str, Any], rc: int | None, problems: list[str]) -> None:
    if rep.get("error"):
        problems.append(f"hostile crashed before attacking: {rep['error'][-600:]}")
    if rc != -signal.SIGKILL:
        problems.append(f"hostile did not die by its own SIGKILL (rc {rc})")
    if rep.get("version") != 2 or rep.get("fds_per_cpu") != 2:
        problems.append(
            f"attach reply: version {rep.get('version')}, fds_per_cpu {rep.get('fds_per_cpu')}"
        )
    if rep.get("nfds") != 2 * rep.get("ncpus", -1):
        problems.append(f"{rep.get('nfds')} fds for {rep.get('ncpus')} CPUs")
    for b in rep.get("breaches", []):
        problems.append(f"hostile consumer could: {b}")
    if rep.get("forged"):
        problems.append(f"hostile forged {rep['forged']} events in the data region")


def check_honest(
    out: dict[str, Any],
    comms: tuple[str, str],
    gen_pids: set[int],
    fin: list[int],
    problems: list[str],
) -> None:
    if out.get("error"):
        problems.append(f"honest reader crashed: {out['error'][-800:]}")
    for cpu, c in out.get("cpus", {}).items():
        if c["bad_order"]:
            problems.append(
                f"cpu {cpu}: {c['bad_order']} duplicate/out-of-order seqs (prev, seq): {c['order']}"
            )
        if "last" not in c:
            continue
        missing = c["last"] - c["first"] - c["n"]
        counted = c["stats"].get("lapped_events", 0) + c["stats"].get("gap_events", 0)
        if not c["bad_order"] and missing != counted:
            problems.append(
                f"cpu {cpu}: seqs {c['first']}..{c['last']}, {c['n']} delivered: "
                f"{missing} missing but {counted} counted (stats {c['stats']})"
            )
    if out.get("nbad"):
        problems.append(
            f"honest reader got {out['nbad']} events the bridge did not write, "
            f"e.g. {out['bad'][:3]}"
        )
    gen = out.get("gen", [])
    forged = [(n, c, p) for n, c, p in gen if c not in comms]
    if forged:
        problems.append(f"honest reader got forged events: {forged[:5]}")
    strangers = {(n, c, p) for n, c, p in gen if c in comms and p not in gen_pids}
    if strangers:
        problems.append(f"generator-named events with foreign pids/comm: {sorted(strangers)[:5]}")
    twice = [k for k, v in Counter((n, p) for n, _c, p in gen).items() if v > 1]
    if twice:
        problems.append(f"events delivered twice: {twice[:5]}")
    seen = {(n, p) for n, c, p in gen if c == comms[1]}
    lacking = [(n, p) for p in fin for n in ("exec", "exit") if (n, p) not in seen]
    allowed = out.get("lost_after_phase2", 0) + sum(
        c.get("missing_after_phase2", 0) for c in out.get("cpus", {}).values()
    )
    if len(lacking) > allowed:
        problems.append(
            f"after the attack {len(lacking)} of {2 * len(fin)} final events "
            f"never arrived ({allowed} counted lost), e.g. {lacking[:4]}; per CPU: "
            f"{ {c: (v.get('last'), v.get('stats')) for c, v in out.get('cpus', {}).items()} }"
        )


def test_hostile_consumer_flood_and_resizes_leave_honest_reader_whole(tmp_path: Path) -> None:
    problems: list[str] = []
    procs: list[Any] = []
    token = secrets.token_hex(3)  # comm names no concurrent run shares
    comms = (f"ag{token}", f"af{token}")
    with bridge(tmp_path) as b:
        sock = str(b.sock)
        try:
            honest = child("honest", sock, str(tmp_path), *comms)
            procs.append(honest)
            line = LineReader(honest.stdout).get(30)
            if line != "attached\n":
                stop(honest, signal.SIGTERM, 10)
                report = tmp_path / "honest.json"
                why = report.read_text()[-1500:] if report.exists() else repr(line)
                raise AssertionError(f"the honest reader did not attach: {why}")
            gen = spawn_execs(tmp_path, comms[0], int(STORM * 100), 100)
            hostile = child("hostile", sock, str(tmp_path), str(STORM - 1))
            flood = child("flood", sock, str(tmp_path), str(STORM))
            procs += [gen, hostile, flood]
            end = time.monotonic() + STORM
            k = 0
            while time.monotonic() < end and b.alive():
                b.resize(SIZES[k % len(SIZES)])
                k += 1
                probe_attach(sock, problems, f"during the attack (resize {k})")
                time.sleep(0.7)
            rep = wait_json(hostile, tmp_path / "hostile.json", 30)
            check_hostile(rep, hostile.returncode, problems)
            fl = wait_json(flood, tmp_path / "flood.json", 30)
            if fl.get("fds_for_garbage"):
                problems.append(f"the bridge handed out fds to bad requests: {fl}")
            gen.wait(60)
            if not b.alive():
                problems.append(f"bridge died (rc {b.proc.returncode}): {b.stderr_text()[-1500:]}")
            else:
                probe_attach(sock, problems, "after the attack")
                (tmp_path / "phase2").touch()
                time.sleep(0.3)
                last = spawn_execs(tmp_path, comms[1], 60, 120)
                procs.append(last)
                last.wait(30)
            (tmp_path / "stop").touch()
            out = wait_json(honest, tmp_path / "honest.json", 30)
            pids = set(json.loads((tmp_path / f"{comms[0]}.json").read_text()))
            fin_file = tmp_path / f"{comms[1]}.json"
            fin = json.loads(fin_file.read_text()) if fin_file.exists() else []
            pids |= set(fin)
            check_honest(out, comms, pids, fin, problems)
            if not b.alive():
                problems.append("bridge died")
        finally:
            for p in procs:
                stop(p, signal.SIGKILL, 5)
    assert not problems, "\n".join(problems)
