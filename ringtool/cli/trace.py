"""``ringtool trace``: live tracing of exec/exit/fork, open, syscalls and net.

Every flag is checked while parsing (:mod:`ringtool.cli.validate`) and the flag
combinations in :func:`check`, before the privilege check; the privilege check runs
before anything imports BCC. Each problem is one line on stderr. Heavy modules are
imported only in :func:`run`.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from ringtool.cli import validate as v
from ringtool.cli import validate_paths as vp
from ringtool.cli.export_args import add_export_args, add_metrics_arg
from ringtool.cli.trace_targets import require_interface, shown_filters, target_notes
from ringtool.errors import UsageError
from ringtool.event.fields import FIELD_NAMES, field_name
from ringtool.kernel.cpus import online_cpus
from ringtool.kernel.privileges import require_bpf_privileges
from ringtool.trace.reading import sources
from ringtool.trace.reading.growth_policy import (
    MIB,
    default_cap,
    default_max_bytes,
    default_start_pages,
    size_text,
)

EVENTS = sources.ALL_EVENTS  # the trace sources' table
DEFAULT_EVENTS = sources.DEFAULT_EVENTS

EPILOG = """\
output: the live TUI when stdout is a terminal and no stream is asked for; a
stream otherwise: --no-tui columns (cut to the terminal unless -w, an open's flags
before its path; whole lines into a pipe or file, also without --no-tui; times with
milliseconds, -T with the date; errors by name: = -2 ENOENT), --json lines, --csv
(--fields, --stats and --flight-recorder stream columns unless --json/--csv is given).
TUI keys: ? help, q quit, p pause, < > sort, / filter, Enter drill-down.
stdout carries the events only (--json: and the summary); notes go to stderr,
and with --stats a stats line every --interval (without it, only an interval
with drops or losses gets one).

examples:
  sudo ringtool trace                          # TUI, exec/exit/fork + open + syscalls
  sudo ringtool trace --no-tui -c bash         # columns, only processes named bash
  sudo ringtool trace --json -d 10 > ev.jsonl  # 10 s of JSON lines, then a summary
  sudo ringtool trace --no-tui -d 10 --hist    # then each syscall's latency histogram
  sudo ringtool trace --json --stats 2>st.jsonl >ev.jsonl  # and a stats line a second
  sudo ringtool trace --events exec -p 1234    # TUI: exec/exit/fork of one process
  sudo ringtool trace --no-tui --events open -x -u 1000  # failed opens of uid 1000
  sudo ringtool trace --no-tui -T --fields ts,pid,comm,flags,ret,path  # chosen columns
  sudo ringtool trace --no-tui --events exec -x          # failed exec attempts
  sudo ringtool trace --no-tui --events disk --hist  # block I/O, then latency per device
  sudo ringtool trace --cgroup /sys/fs/cgroup/system.slice/docker-ID.scope  # TUI, a container
  sudo ringtool trace --quiet --events net -i eth0 --snaplen 128 --pcap out.pcapng
  sudo ringtool trace --json --ordered --window-us 500   # merged in timestamp order
  sudo ringtool trace --json --flight-recorder 1M > fr.jsonl  # kill -USR1 PID: dump
  sudo ringtool trace --record run.arrows      # dashboard, and everything kept on disk
  ringtool replay run.arrows --json            # the recording as JSON lines, later
"""

if TYPE_CHECKING:
    from ringtool.export.trace_hook import HookOptions
    from ringtool.trace.outputs import RunConfig
    from ringtool.trace.reading.options import TraceOptions


#: Per-CPU ring pages at most (1 GiB a CPU).
MAX_BUFFER_PAGES = 1 << 18
PAGE_BYTES = 4096


def ram_bytes() -> int:
    """The machine's memory (sysconf: physical pages times the page size)."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def register(subs: Any) -> None:
    p = subs.add_parser(
        "trace",
        help="trace exec/exit/fork, opens, syscalls and packets live (TUI, columns, JSON)",
        description="Trace processes, file opens, syscalls and network packets with BPF "
        "(RINGBUF per CPU for exec/open/syscalls, PERF_EVENT_ARRAY for net).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("-p", "--pid", type=v.integer(1, v.PID_MAX), help="only this process (tgid)")
    p.add_argument(
        "-c", "--comm", type=v.comm, help="only processes with this name (comm, <= 15 bytes)"
    )
    p.add_argument("-t", "--tid", type=v.integer(1, v.PID_MAX), help="only this thread")
    p.add_argument(
        "-u", "--uid", type=v.uid, metavar="UID", help="only tasks of this user (real uid or name)"
    )
    p.add_argument(
        "--cgroup", type=vp.cgroup_dir, metavar="PATH",
        help="only tasks in this cgroup v2 directory or below it (e.g. a container's)",
    )  # fmt: skip
    p.add_argument(
        "-n", "--name", type=v.regex, metavar="REGEX",
        help="only processes whose name matches REGEX (re.search; applied after the ring, "
        "so drops are counted before it; -c/-p/-t/-u/--cgroup filter in the kernel)",
    )  # fmt: skip
    p.add_argument(
        "-x",
        "--failed",
        action="store_true",
        help="failed calls only: opens and exec attempts that failed, TCP connections "
        "that never reached ESTABLISHED, disk requests completed with an error",
    )
    p.add_argument(
        "-d", "--duration", type=v.number(above=0, hi=v.DURATION_MAX_S, unit="seconds"),
        metavar="SECONDS",
        help="stop after this",
    )  # fmt: skip
    p.add_argument(
        "--events", type=v.name_list(EVENTS), metavar="LIST",
        help=f"sources, comma-separated: {','.join(EVENTS)} (default "
        f"{','.join(DEFAULT_EVENTS)}, plus net when -i is given; tcp and cpuwait only "
        "when named: cpuwait, CPU run-queue waits per process like runqlat, runs at every "
        "context switch and costs more than the default sources)",
    )  # fmt: skip
    p.add_argument(
        "-i", "--iface", type=v.ifname,
        help="network interface for the net source (TC clsact; with the tcp source too, a "
        "packet of a TCP connection it follows names that connection's process)",
    )  # fmt: skip
    p.add_argument(
        "--snaplen", type=v.integer(0, 65535, "bytes"), default=96,
        help="packet bytes captured (default 96)",
    )  # fmt: skip
    p.add_argument(
        "--buffer-pages", type=v.power_of_two(MAX_BUFFER_PAGES), default=None,
        help="pages per CPU ring buffer at start, a power of two (default: 4096 where "
        "the memory allows, fewer on many CPUs, at least 128)",
    )  # fmt: skip
    p.add_argument(
        "--max-buffer-mb", type=v.number(above=0, hi=ram_bytes() // MIB, unit="MiB"),
        metavar="MB", help=MAX_BUFFER_HELP,
    )  # fmt: skip
    p.add_argument(
        "--no-grow", action="store_true",
        help="keep every ring at --buffer-pages (a full ring drops events)",
    )  # fmt: skip
    p.add_argument(
        "--interval", type=v.number(0.01, 3600, unit="seconds"), default=1.0,
        help="the TUI's refresh and --stats' interval, s (default 1)",
    )  # fmt: skip
    p.add_argument(
        "--stats", action="store_true",
        help="a stats line on stderr every --interval (rates, ring fill, drops per CPU, cost; "
        "JSON with --json); without it only an interval with drops or losses gets one. "
        "Streams columns unless --json/--csv",
    )  # fmt: skip
    p.add_argument(
        "--slow-ms", type=v.number(0.001, 1e9, unit="ms"), default=100.0,
        help="report syscalls slower than this, and waits for a CPU this long (cpuwait), "
        "as events (default 100 ms)",
    )  # fmt: skip
    p.add_argument(
        "--hist", action="store_true",
        help="at the end, each syscall's latency histogram (log2 ns slots, printed as bcc's "
        "funclatency prints a function's), each block device's service times with disk, "
        "and, with cpuwait, the CPU waits of the machine and the processes that waited "
        "most (log2 us, like runqlat)",
    )  # fmt: skip
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON lines on stdout")
    out.add_argument("--csv", action="store_true", help="CSV (RFC 4180) with a header line")
    out.add_argument(
        "--no-tui", action="store_true",
        help="bcc-style columns (cut to the terminal's width; whole lines into a pipe or file)",
    )  # fmt: skip
    p.add_argument(
        "--fields", type=v.name_list(FIELD_NAMES, field_name), metavar="A,B,C",
        help="only these event fields, in this order (--json, --csv, columns): their "
        "names (docs/schema.md) or column headers (ts or TS)",
    )  # fmt: skip
    p.add_argument(
        "-w", "--wide", action="store_true", help="columns: never cut lines, also on a terminal"
    )
    p.add_argument(
        "-T", "--date", action="store_true",
        help="columns: times with their date (2026-12-06 12:00:01.250; default 12:00:01.250)",
    )  # fmt: skip
    p.add_argument("--pcap", type=vp.output_file, metavar="FILE", help=PCAP_HELP)
    p.add_argument("--force", action="store_true", help=FORCE_HELP)
    p.add_argument("--record", type=vp.output_file, metavar="FILE", help=RECORD_HELP)
    p.add_argument(
        "--record-rotate", type=v.size_or_duration, metavar="SIZE|TIME",
        help="with --record: parts FILE-STEM.0001.SUFFIX, ... each ending at SIZE (100M) or "
        "after TIME (10m, 1h)",
    )  # fmt: skip
    p.add_argument("--ordered", action="store_true", help="merge CPUs in timestamp order")
    p.add_argument(
        "--cost", action="store_true",
        help="turn the kernel's BPF run-time statistics on for the whole run: the summary's "
        "cost has the BPF programs' run time (default: off, as each run of every BPF "
        "program on the machine pays for them; the dashboard has them while its cost "
        "panel, key c, is open)",
    )  # fmt: skip
    p.add_argument(
        "--no-cost", action="store_true",
        help="never turn the kernel's BPF run-time statistics on (no BPF figures in the "
        "cost panel either)",
    )  # fmt: skip
    p.add_argument(
        "--keep-exited", action="store_true",
        help="dashboard: keep exited processes in the table (default: dimmed a few s, then gone)",
    )  # fmt: skip
    p.add_argument(
        "--window-us", type=v.number(0, 10_000_000, unit="µs"),
        help="with --ordered: reorder window, µs",
    )  # fmt: skip
    p.add_argument(
        "--flight-recorder", type=v.ring_bytes(PAGE_BYTES, MAX_BUFFER_PAGES * PAGE_BYTES),
        metavar="SIZE",
        help="keep the newest events and packets in the kernel (SIZE bytes a CPU, a power of "
        "two, e.g. 1M) and write them (and --pcap) on SIGUSR1 and at exit; nothing is read "
        "while tracing",
    )  # fmt: skip
    p.add_argument(
        "--no-cache", action="store_true",
        help="compile every source with BCC, not from the program cache "
        "(/var/cache/ringtool/programs; also RINGTOOL_NO_CACHE=1; docs/trace.md)",
    )  # fmt: skip
    p.add_argument(
        "--kmes", type=vp.socket_path, metavar="SOCKET",
        help="also publish events via a KMES bridge",
    )  # fmt: skip
    add_export_args(p, quiet_group=out)
    add_metrics_arg(p)
    p.set_defaults(func=run, check=check)


MAX_BUFFER_HELP = (
    "a CPU's ring that drops or fills up moves to one twice as big while tracing, all "
    "CPUs' rings together at most MB MiB (default: 1/64 of the memory, at most 256 MiB); "
    "a ring idle for 30 s steps back down"
)
PCAP_HELP = "write net packets as pcapng to a new file (0600; a symlink is never followed)"
FORCE_HELP = "--pcap/--record may replace an existing file (by a new 0600 one; never a symlink)"
RECORD_HELP = (
    "also record every event and the run's accounting into FILE, an Arrow IPC stream "
    "(0600; read back with ringtool replay or ringtool query, or pyarrow, polars, "
    "DuckDB; docs/record.md)"
)


def events_of(args: argparse.Namespace) -> tuple[str, ...]:
    """The sources to run: ``--events``, else the defaults plus net when ``-i`` is given."""
    return tuple(args.events or (DEFAULT_EVENTS + (("net",) if args.iface else ())))


def check(args: argparse.Namespace) -> None:
    """The flag combinations (:class:`UsageError`); each value was checked by parsing."""
    if args.pcap is not None and "net" not in events_of(args):
        raise UsageError("--pcap writes the net source's packets: add -i IFACE")
    if args.force and args.pcap is None and args.record is None:
        raise UsageError("--force lets --pcap or --record overwrite a file: add --pcap FILE "
                         "or --record FILE")  # fmt: skip
    if args.record_rotate is not None and args.record is None:
        raise UsageError("--record-rotate cuts a recording into parts: add --record FILE")
    if args.window_us is not None and not args.ordered:
        raise UsageError("--window-us needs --ordered")
    if args.hist and not {"syscalls", "disk", "cpuwait"} & set(events_of(args)):
        raise UsageError("--hist shows the syscalls, disk and cpuwait sources' histograms: "
                         "add syscalls, disk or cpuwait to --events")  # fmt: skip
    if args.failed and not {"open", "exec", "tcp", "disk"} & set(events_of(args)):
        raise UsageError("-x/--failed selects failed opens, execs, TCP connections and disk "
                         "requests: add open, exec, tcp or disk to --events")  # fmt: skip
    if args.cgroup is not None and "cpuwait" in events_of(args):
        raise UsageError("--cgroup does not select cpuwait's waits (-p, -t, -c and -u do): "
                         "trace cpuwait without --cgroup")  # fmt: skip
    if args.fields and args.quiet:
        raise UsageError("--fields selects what --json, --csv or columns show: not with --quiet")
    if args.stats and args.quiet:
        raise UsageError("--stats writes a stats line beside the events: not with --quiet")
    if args.cost and args.no_cost:
        raise UsageError("--cost turns the BPF run-time statistics on, --no-cost never: "
                         "give one of them")  # fmt: skip
    check_growth(args)
    if args.flight_recorder is not None:
        if args.max_buffer_mb is not None:
            raise UsageError(
                "--flight-recorder keeps SIZE per CPU, it does not grow: drop --max-buffer-mb"
            )
        if args.ordered:
            raise UsageError(
                "--flight-recorder writes each dump in timestamp order: drop --ordered"
            )
    if args.iface and "net" in events_of(args):
        require_interface(args.iface)  # a typo is an error, not a trace without packets


def buffer_pages(args: argparse.Namespace) -> int:
    """``--buffer-pages``, or its default for the cap (``--max-buffer-mb`` or the
    machine's default) and the CPUs
    (:func:`~ringtool.trace.reading.growth_policy.default_start_pages`)."""
    if args.buffer_pages is not None:
        return int(args.buffer_pages)
    cap = default_cap(ram_bytes()) if args.max_buffer_mb is None else args.max_buffer_mb * MIB
    return default_start_pages(int(cap), len(online_cpus()))


def start_bytes(args: argparse.Namespace) -> int:
    """What the rings take at start: one ring of ``--buffer-pages`` per online CPU."""
    return len(online_cpus()) * buffer_pages(args) * 4096


def check_growth(args: argparse.Namespace) -> None:
    """``--max-buffer-mb`` against ``--no-grow``, the sources and the rings at start."""
    if args.max_buffer_mb is None:
        return
    if args.no_grow:
        raise UsageError("--max-buffer-mb caps the rings' growth: not with --no-grow")
    if not set(events_of(args)) - {"net"}:
        raise UsageError("--max-buffer-mb sizes the exec/open/syscalls rings: add one of "
                         "them to --events")  # fmt: skip
    start = start_bytes(args)
    if args.max_buffer_mb * MIB < start:
        raise UsageError(
            f"--max-buffer-mb {args.max_buffer_mb:g} is less than the rings take at start "
            f"({len(online_cpus())} CPUs x {size_text(buffer_pages(args) * 4096)} = "
            f"{size_text(start)}): give at least {start / MIB:g}, or fewer --buffer-pages"
        )


def max_buffer_bytes(args: argparse.Namespace) -> int | None:
    """The cap on the rings' growth in bytes (None: ``--no-grow``)."""
    if args.no_grow:
        return None
    if args.max_buffer_mb is not None:
        return int(args.max_buffer_mb * MIB) // 4096 * 4096
    return default_max_bytes(ram_bytes(), start_bytes(args))


def run(args: argparse.Namespace) -> int:
    from ringtool.export.trace_hook import hook_options  # numpy: not for --help

    hook = hook_options(args)  # --export/--metrics checked before anything loads
    require_bpf_privileges("ringtool trace")  # before BCC is imported
    from ringtool.trace.runner import run_trace

    opts, cfg = settings(args, hook)
    return run_trace(opts, cfg)


def settings(args: argparse.Namespace, hook: HookOptions) -> tuple[TraceOptions, RunConfig]:
    """What to trace and how to run, from the parsed flags (``hook``: from
    :func:`ringtool.export.trace_hook.hook_options`)."""
    from ringtool.trace.outputs import RunConfig, read_latency
    from ringtool.trace.reading.options import TraceOptions

    events = events_of(args)
    for note in target_notes(args.pid, args.tid):
        print(f"ringtool trace: {note}", file=sys.stderr)
    mode = output_mode(args, terminal=sys.stdout.isatty())
    width = None if args.wide or not sys.stdout.isatty() else shutil.get_terminal_size().columns
    opts = TraceOptions(
        events=events, pid=args.pid, comm=args.comm, buffer_pages=buffer_pages(args),
        slow_ms=args.slow_ms, iface=args.iface, snaplen=args.snaplen, tid=args.tid,
        uid=args.uid, cgroup=args.cgroup, failed_only=args.failed,
        max_buffer_bytes=None if args.flight_recorder is not None else max_buffer_bytes(args),
        flight_bytes=args.flight_recorder, per_process=mode == "tui",
        program_cache=not args.no_cache,
    )  # fmt: skip
    cfg = RunConfig(
        mode=mode, duration=args.duration, interval=args.interval, ordered=args.ordered,
        window_us=args.window_us, pcap=args.pcap, force=args.force, kmes=args.kmes, width=width,
        hist=args.hist, cost=True if args.cost else False if args.no_cost else None,
        export=hook if hook.wanted else None, fields=args.fields, name=args.name,
        keep_exited=args.keep_exited, stats_lines=args.stats,
        filters=shown_filters(args, events, DEFAULT_EVENTS + (("net",) if args.iface else ())),
        dates=args.date,
        record=args.record, record_rotate=args.record_rotate,
    )  # fmt: skip
    latency = read_latency(cfg)  # the dashboard alone reads less often
    return dataclasses.replace(opts, max_latency_s=latency or opts.max_latency_s), cfg


def output_mode(args: argparse.Namespace, *, terminal: bool) -> str:
    """The output: ``quiet``, ``json`` or ``csv`` when asked for; ``columns`` when
    stdout is no ``terminal`` or a flag asks for a stream (``--no-tui``, and
    ``--fields``, ``--stats``, ``--flight-recorder``, which only a stream shows);
    else the dashboard, ``tui``."""
    if args.quiet:
        return "quiet"
    if args.json:
        return "json"
    if args.csv:
        return "csv"
    streamed = args.no_tui or args.fields or args.stats or args.flight_recorder is not None
    return "columns" if streamed or not terminal else "tui"
