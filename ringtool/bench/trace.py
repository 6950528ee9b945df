"""``ringtool bench trace``: the whole ``ringtool trace`` pipeline under a real load.

The producer is ``csrc/syscall_loop.c`` (compiled with ``cc`` at run time,
:mod:`ringtool.bench.trace_proc`) making ``openat`` + ``close`` calls at full speed,
pinned to CPU 0; ``ringtool trace`` runs pinned to CPU 1
(:mod:`ringtool.bench.trace_child`). Phases, each bounded by ``seconds``:

* ``trace-e2e``, per output (``json`` and ``columns`` to a file, ``tui``: the TUI
  without a terminal, ``export``: ``--export`` to a local ``nats-server`` with
  ``--quiet``, ``quiet``: ``--quiet``, ``record``: ``--record`` with ``--quiet``,
  ``json-record``: ``--record`` beside ``--json`` to a file; the two recording rows
  give their ``bytes_per_event`` on disk and what the recording adds to the output
  it runs beside, measured in the same run: ``record_added_ns_per_event`` (the
  consumer ns per event less the ``quiet`` or ``json`` row's) and ``record_ratio``):
  ``trace --events open -c rt_bench_XXXXXX --buffer-pages 1024``
  while the producer runs ``seconds``, ended by SIGINT a drain's second after the
  producer (however late a loaded machine started it); events/s offered (loop
  iterations: one ``openat`` each) and delivered (the summary's ``events``), kernel
  drops, and the consumer's CPU per delivered event: ``wait4`` user + system CPU of
  the trace process minus that of an idle run as long (no producer), so loading and
  idle polling cancel out;
* ``trace-record-mix``: ``--record`` with ``--quiet`` of ``--events open,exec`` while
  the producer runs its ``mix`` mode (opens of paths of many lengths, failed ones,
  fork + exec + exit every 64): the ``bytes_per_event`` of a typical mix, and its
  events by type;
* ``trace-overhead``: ns per syscall of the producer untraced, traced as by default
  (default sources, ``-c rt_bench_XXXXXX``, ``--json`` to ``/dev/null``: the kernel's
  BPF run-time statistics off), with ``bpf/trace_empty.c`` (empty programs on the same
  tracepoints), and traced with ``--cost`` (the statistics on, as while the
  dashboard's cost panel is open: ``stats_*``), in alternating rounds; the median of
  each. The ratio is the programs' (the default run): the statistics' clock reads are
  the kernel's, paid by every BPF program while they are on, and shown apart;
  ``tui_*``: traced as the dashboard runs (headless, its cost panel closed: the
  statistics off), which also keeps every process's syscall histograms in the kernel
  (bpf/trace_syscalls.c, ``proc_hist``); ``floor_*``: what every event needs (the
  clock reads and the path read, ``bench primitives``' blocks measured right after)
  and ``floor_ratio`` = ``above_empty_ns`` (traced − empty) / ``floor_ns``
  (:mod:`ringtool.bench.trace_floor`);
* ``trace-cpuwait``: what the cpuwait source costs each context switch, beside the
  default sources (:mod:`ringtool.bench.trace_switch`);
* ``trace-tui-cpu``: the real dashboard's CPU (on a pseudo-terminal of 120x40, one
  refresh a second) at a paced 1,000 opens a second, beside ``--json``'s at the same
  load and the idle dashboard's (:mod:`ringtool.bench.trace_tui`);
* ``trace-idle``: CPU% of ``trace -c no-such-comm`` (``/proc`` schedstat, exact
  ns) while the producer runs its ``openexec`` mode (opens plus a fork + exec every
  64 iterations);
* ``trace-startup``: seconds from starting ``ringtool trace --json`` to its first
  event line on stdout, the producer already running (``ready_s``: to the sources
  being attached); ``cache`` ``off``: compiled by BCC (``--no-cache``), ``warm``:
  loaded from the program cache (docs/trace.md, "Program cache"); then, with the
  producer running, ``ringtool trace --json`` with the default sources beside
  libbpf-tools' ``opensnoop`` and ``bpftrace``, each from the command to its start
  line and first event (:mod:`ringtool.bench.trace_start`: ``tracer``, ``start_s``,
  ``ringtool_ratio``);
* ``trace-source-cost``, per RINGBUF source: its programs' runs, average ns, CPU share
  and BPF ns per event, every source traced at once under a mixed load
  (:mod:`ringtool.bench.trace_sources`);
* ``trace-net-cost``: the net source's ns per packet without and with the owner
  lookup (``BPF_PROG_TEST_RUN``), and the tcp source's ns per connection without and
  with publishing owners (:mod:`ringtool.bench.trace_net`).

Only numbers; nothing here is asserted.
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ringtool.bench.trace_floor import floor_fields, measure_floor
from ringtool.bench.trace_net import packet_cost, tcp_cost
from ringtool.bench.trace_proc import (
    ChildResult,
    Loop,
    TraceChild,
    build_loop,
    run_loop,
    task_cpu_ns,
)
from ringtool.bench.trace_sources import source_cost
from ringtool.bench.trace_start import peer_starts
from ringtool.bench.trace_switch import cpuwait_cost
from ringtool.bench.trace_tui import tui_cpu
from ringtool.kernel.privileges import require_bpf_privileges

PRODUCER_CPU = 0
TRACE_CPU = 1
BUFFER_PAGES = 1024
OUTPUTS = ("json", "columns", "tui", "export", "quiet", "record", "json-record")
#: A recording row -> the row of the output it runs beside.
RECORD_BESIDE = {"record": "quiet", "json-record": "json"}
#: Counted rounds of the start-up beside the peers (one start of each a round).
START_ROUNDS = 3
#: Trace run past the producer's end: the drain of what is left.
DRAIN_S = 1.0
#: ``-d`` of an e2e run: only a bound for a run whose interrupt never came (each run is
#: ended by SIGINT once its producer ended and the drain passed, so a producer that
#: started late on a loaded machine is traced whole: a ``-d`` of the producer's seconds
#: ended the trace under it, and its late opens were offered but never traced).
E2E_BOUND_S = 600.0
OVERHEAD_ROUNDS = 2


def _e2e_args(comm: str, output: str, duration: float, url: str | None,
              record: Path, events: str = "open") -> list[str]:  # fmt: skip
    base = ["--events", events, "-c", comm, "--buffer-pages", str(BUFFER_PAGES),
            "-d", f"{duration:.3f}"]  # fmt: skip
    if output == "json":
        return [*base, "--json"]
    if output == "quiet":
        return [*base, "--quiet"]
    if output in RECORD_BESIDE:
        kind = "--quiet" if output == "record" else "--json"
        return [*base, kind, "--record", str(record), "--force"]
    if output == "export":
        return [*base, "--export", str(url), "--quiet"]
    return [*base, "--no-tui", "-w"]


def _cpu_of_run(
    args: list[str], headless: bool, out: Path, duration: float,
    loop: tuple[Path, float, str] | None,
) -> tuple[ChildResult, Any, float]:  # fmt: skip
    """One trace run (with the producer when ``loop`` is given, then :data:`DRAIN_S`;
    without it ``duration`` seconds), ended by SIGINT: what the child reported, the
    loop result and the seconds from ready to the interrupt."""
    with open(out, "w") as f:
        child = TraceChild(args, TRACE_CPU, headless_tui=headless, stdout=f)
        try:
            child.wait_ready()
            ready = time.monotonic()
            if loop:
                result = run_loop(loop[0], loop[2], PRODUCER_CPU, loop[1])
                time.sleep(DRAIN_S)
            else:
                result = None
                time.sleep(duration)
            ran = time.monotonic() - ready
            done = child.finish(interrupt=True)
        finally:
            child.kill()
    return done, result, ran


def e2e(binary: Path, output: str, seconds: float, tmp: Path, url: str | None, *,
        mode: str = "open", events: str = "open") -> dict[str, Any]:  # fmt: skip
    """One ``trace-e2e`` row (the producer in ``mode``, ``trace --events events``)."""
    duration = seconds + DRAIN_S
    record = tmp / "e2e.arrows"
    args = _e2e_args(binary.name, output, E2E_BOUND_S, url, record, events)
    headless = output == "tui"
    out = tmp / f"e2e.{output}"
    # the idle run as long as the loaded one ran (a loaded machine starts the producer
    # late): their difference is the events' cost, not the extra idle polling; its
    # output and recording apart (the row's sizes are the loaded run's)
    run_, loop, ran = _cpu_of_run(args, headless, out, duration, (binary, seconds, mode))
    idle_args = _e2e_args(binary.name, output, E2E_BOUND_S, url, tmp / "idle.arrows", events)
    idle_run, _, _ = _cpu_of_run(idle_args, headless, tmp / "idle.out", ran, None)
    summary, cpu, idle_cpu = run_.summary, run_.run_cpu_s, idle_run.run_cpu_s
    delivered = int(summary["events"])
    return {
        "bench": "trace-e2e", "output": output,
        "offered_per_s": round(loop.iterations / loop.seconds),
        "delivered_per_s": round(delivered / loop.seconds),
        "dropped": int(summary["dropped"]),
        "consumer_ns_per_event": round((cpu - idle_cpu) * 1e9 / delivered, 1)
        if delivered else None,
        "offered": loop.iterations, "delivered": delivered, "lost": summary["lost"],
        "consumer_cpu_s": round(cpu, 3), "idle_cpu_s": round(idle_cpu, 3),
        "total_cpu_s": round(run_.cpu_s, 3),
        "output_bytes": out.stat().st_size,
        **({"record_bytes": record.stat().st_size,
            "bytes_per_event": round(record.stat().st_size / delivered, 1) if delivered else None,
            "by_type": summary.get("by_type")}
           if output in RECORD_BESIDE else {}),
    }  # fmt: skip


def record_added(rows: list[dict[str, Any]]) -> None:
    """Each recording row of ``rows`` given what it adds to the row of the output it
    runs beside (:data:`RECORD_BESIDE`): consumer ns per event, and the ratio."""
    by_output = {r["output"]: r for r in rows if r.get("bench") == "trace-e2e"}
    for output, beside in RECORD_BESIDE.items():
        row, base = by_output.get(output), by_output.get(beside)
        if row is None or base is None:
            continue
        ns, base_ns = row.get("consumer_ns_per_event"), base.get("consumer_ns_per_event")
        if ns is None or base_ns is None:
            continue
        row["record_added_ns_per_event"] = round(ns - base_ns, 1)
        row["record_ratio"] = round(ns / base_ns, 2) if base_ns > 0 else None


def record_mix(binary: Path, seconds: float, tmp: Path) -> dict[str, Any]:
    """The ``trace-record-mix`` row (see the module doc)."""
    row = e2e(binary, "record", seconds, tmp, None, mode="mix", events="open,exec")
    return {**row, "bench": "trace-record-mix"}


@contextlib.contextmanager
def _empty_programs() -> Iterator[None]:
    from ringtool.event.registry import TASK_HEADER
    from ringtool.programs.loader import compile_program

    # (RAW_)TRACEPOINT_PROBEs attach on load; the open source's entry where it has one
    obj = compile_program("trace_empty.c", needs=TASK_HEADER)
    try:
        yield
    finally:
        obj.cleanup()


def _traced(binary: Path, seconds: float, *, bpf_stats: bool = False, tui: bool = False
            ) -> float:  # fmt: skip
    args = ["-c", binary.name, "--buffer-pages", str(BUFFER_PAGES), "--json"]
    child = TraceChild(args, TRACE_CPU, bpf_stats=bpf_stats, headless_tui=tui)
    try:
        child.wait_ready()
        ns = run_loop(binary, "open", PRODUCER_CPU, seconds).ns_per_syscall
        child.finish(interrupt=True)
    finally:
        child.kill()
    return ns


def overhead(binary: Path, seconds: float, *, quick: bool = False) -> dict[str, Any]:
    """The ``trace-overhead`` row (see the module doc), with the floor of its blocks
    measured right after it (:mod:`ringtool.bench.trace_floor`)."""
    slice_s = max(0.5, seconds / OVERHEAD_ROUNDS)
    runs: dict[str, list[float]] = {"untraced": [], "empty": [], "traced": [], "stats": [],
                                    "tui": []}  # fmt: skip
    for _ in range(OVERHEAD_ROUNDS):
        runs["untraced"].append(run_loop(binary, "open", PRODUCER_CPU, slice_s).ns_per_syscall)
        with _empty_programs():
            runs["empty"].append(run_loop(binary, "open", PRODUCER_CPU, slice_s).ns_per_syscall)
        runs["traced"].append(_traced(binary, slice_s))
        runs["stats"].append(_traced(binary, slice_s, bpf_stats=True))
        runs["tui"].append(_traced(binary, slice_s, tui=True))
    med = {k: statistics.median(v) for k, v in runs.items()}
    added, empty_added = med["traced"] - med["untraced"], med["empty"] - med["untraced"]
    stats_added = med["stats"] - med["untraced"]

    def ratio(to_empty: float) -> float | None:
        return round(to_empty / empty_added, 2) if empty_added > 0 else None

    return {
        "bench": "trace-overhead",
        "untraced_ns_per_syscall": round(med["untraced"], 1),
        "traced_ns_per_syscall": round(med["traced"], 1),
        "empty_ns_per_syscall": round(med["empty"], 1),
        "traced_added_ns": round(added, 1), "empty_added_ns": round(empty_added, 1),
        "added_ratio": ratio(added),
        "stats_ns_per_syscall": round(med["stats"], 1),
        "stats_added_ns": round(stats_added, 1),
        "stats_ratio": ratio(stats_added),
        "tui_ns_per_syscall": round(med["tui"], 1),
        "tui_added_ns": round(med["tui"] - med["untraced"], 1),
        **floor_fields(measure_floor(quick=quick), added - empty_added),
        "rounds": OVERHEAD_ROUNDS, "slice_s": slice_s,
    }  # fmt: skip


def idle(binary: Path, seconds: float) -> dict[str, Any]:
    child = TraceChild(["-c", "no-such-comm", "--json"], TRACE_CPU)
    try:
        child.wait_ready()
        loop = Loop(binary, "openexec", PRODUCER_CPU, seconds)
        t0, c0 = time.monotonic(), task_cpu_ns(child.proc.pid)
        result = loop.result()
        t1, c1 = time.monotonic(), task_cpu_ns(child.proc.pid)
        child.finish(interrupt=True)
    finally:
        child.kill()
    return {
        "bench": "trace-idle", "cpu_pct": round((c1 - c0) / ((t1 - t0) * 1e9) * 100, 3),
        "workload_opens_per_s": round(result.iterations / result.seconds),
        "workload_execs_per_s": round(result.execs / result.seconds),
    }  # fmt: skip


def startup(binary: Path, cache: str) -> dict[str, Any]:
    """One start (``cache``: ``"off"``: ``--no-cache``, BCC compiles; ``"warm"``: the
    programs come from the program cache, filled by a start before this one)."""
    args = ["--events", "open", "-c", binary.name, "--json"]
    if cache == "off":
        args.append("--no-cache")
    loop = Loop(binary, "open", PRODUCER_CPU, 600.0)
    child = TraceChild(args, TRACE_CPU, stdout=subprocess.PIPE)
    try:
        assert child.proc.stdout is not None
        ready_s = child.wait_ready()
        first = None
        for line in child.proc.stdout:  # the start line, then events
            if line.startswith(b'{"type": "open"'):
                first = time.monotonic() - child.started
                break
        child.proc.stdout.close()
        child.finish(interrupt=True)
    finally:
        child.kill()
        loop.proc.kill()
        loop.proc.wait()
    seconds = round(first, 3) if first else None
    return {"bench": "trace-startup", "tracer": "ringtool --events open -c COMM",
            "cache": cache, "seconds": seconds, "ready_s": round(ready_s, 3)}  # fmt: skip


def starts_beside_peers(binary: Path, rounds: int) -> list[dict[str, Any]]:
    """ringtool's start-up beside opensnoop's and bpftrace's, the producer running
    (every tracer has open events to show)."""
    loop = Loop(binary, "open", PRODUCER_CPU, 600.0)
    try:
        return peer_starts(TRACE_CPU, rounds)
    finally:
        loop.proc.kill()
        loop.proc.wait()


def _export_url(stack: contextlib.ExitStack, tmp: Path) -> tuple[str | None, str]:
    from ringtool.bench.local_server import LocalNats
    from ringtool.errors import ExportError

    try:
        server = stack.enter_context(LocalNats(tmp / "nats"))
    except ExportError as exc:
        return None, str(exc)
    return server.url, ""


def run(*, repeats: int, quick: bool, seconds: float | None = None) -> list[dict[str, Any]]:
    """All phases (see the module doc); ``seconds`` per phase (default 3, 1 with
    ``quick``); ``repeats`` is not used (each phase is one timed run)."""
    require_bpf_privileges("ringtool bench trace")
    secs = seconds if seconds is not None else (1.0 if quick else 3.0)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ringtool-bench-trace-") as d, \
            contextlib.ExitStack() as stack:  # fmt: skip
        tmp = Path(d)
        binary = build_loop(tmp)
        url, why = _export_url(stack, tmp)
        for output in OUTPUTS:
            if output == "export" and url is None:
                rows.append({"bench": "trace-e2e", "output": "export", "offered_per_s": None,
                             "delivered_per_s": None, "dropped": None,
                             "consumer_ns_per_event": None, "skipped": why})  # fmt: skip
                continue
            rows.append(e2e(binary, output, secs, tmp, url))
        record_added(rows)
        rows.append(record_mix(binary, secs, tmp))
        rows.append(overhead(binary, secs, quick=quick))
        rows.append(cpuwait_cost(tmp, secs))
        rows.append(tui_cpu(binary, secs, tmp, producer_cpu=PRODUCER_CPU, trace_cpu=TRACE_CPU))
        rows.append(idle(binary, secs))
        startup(binary, "fill")  # a start that may compile: the next one loads
        rows += [startup(binary, "off"), startup(binary, "warm")]
        rows += starts_beside_peers(binary, 1 if quick else START_ROUNDS)
        rows.extend(source_cost(binary, secs, tmp, producer_cpu=PRODUCER_CPU,
                                trace_cpu=TRACE_CPU))  # fmt: skip
        rows += packet_cost(20_000 if quick else 200_000, cpu=TRACE_CPU)
        rows += tcp_cost(secs, trace_cpu=TRACE_CPU, producer_cpu=PRODUCER_CPU)
    return rows


__all__ = ["OUTPUTS", "run"]
