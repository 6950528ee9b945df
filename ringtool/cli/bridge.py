"""``ringtool bridge``: BPF events -> per-CPU KMES buffers that other processes attach to.

Attaches ``bpf/kmes_bridge.c`` (process exec via a BPF ring buffer, process exit via a
perf event array), drains both with ringtool's own consumers, and writes every event
into the KMES buffer of the CPU it came from (origin_class 1 or 2; lost-event notices
from the bridge itself are origin_class 3). Events that arrive before the capacity is
known go to boot buffers (docs/kmes.md section 9). Serves the attach protocol on
``--socket``; SIGHUP re-reads the config and resizes; SIGINT/SIGTERM stop cleanly.

Read it with ``ringtool kmes-read [--follow] [--json]``.
"""

from __future__ import annotations

import argparse
import select
import signal
import struct
import sys
import time
from typing import Any

from ringtool.bridge.consumers import ConsumerLog
from ringtool.bridge.core import KmesBridge
from ringtool.cli import validate as v
from ringtool.cli import validate_paths as vp
from ringtool.cli.export_args import add_export_args, add_metrics_arg
from ringtool.errors import KmesError, RingtoolError
from ringtool.event.safe_text import printable
from ringtool.kernel.cpus import online_cpus
from ringtool.kernel.privileges import require_bpf_privileges
from ringtool.kmes import layout as L
from ringtool.kmes.attach import DEFAULT_SOCKET
from ringtool.kmes.config import CONFIG_MAX, DEFAULT_CONFIG, parse_config
from ringtool.kmes.events import BRIDGE_PREFIX, EVENT_EXEC, EVENT_EXIT, EVENT_LOST

EVENTS = {"exec": EVENT_EXEC, "exit": EVENT_EXIT}
_LOST = struct.Struct("<IIQ")  # source origin_class, reserved, count

DESCRIPTION = """\
Trace process exec and exit with BPF and serve the events as one shared-memory
(KMES) buffer per CPU: any number of readers attach through the socket and read
the buffers directly from shared memory. SIGHUP re-reads the config file and resizes the
buffers; Ctrl-C or SIGTERM stops. On stderr: one line per consumer process attaching
(pid from the socket's peer credentials) and detaching (exiting), and every
--stats-interval seconds one line with the event rate and the events lost; --quiet
keeps only the start line, errors and the final counts.
"""

EPILOG = """\
examples:
  sudo ringtool bridge                              # serve exec+exit on the default socket
  sudo ringtool bridge --capacity 4M -d 60          # 4 MiB per CPU, stop after 60 s
  sudo ringtool bridge --events exec --socket /tmp/k.sock   # exec only, own socket
  sudo ringtool bridge --stats-interval 60 --quiet  # (--quiet wins: no rate lines)
  sudo ringtool bridge --stats-interval 1           # a rate line every second
  sudo ringtool bridge --export nats://broker:4222  # also publish to NATS JetStream
  sudo ringtool kmes-read --follow                  # (another terminal) read the events
"""


def register(subs: Any) -> None:
    p = subs.add_parser(
        "bridge",
        help="serve BPF events as per-CPU KMES buffers",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--socket", type=vp.socket_path, default=DEFAULT_SOCKET, metavar="PATH",
        help=f"attach socket ({DEFAULT_SOCKET})",
    )  # fmt: skip
    p.add_argument(
        "--capacity",
        type=v.kmes_capacity,
        metavar="BYTES",
        help="per-CPU buffer bytes, a power of two (e.g. 1M); default: the config "
        f"file's capacity, else {L.DEFAULT_CAPACITY}",
    )
    p.add_argument(
        "--config", type=vp.input_file(CONFIG_MAX, parse_config, optional=True),
        default=DEFAULT_CONFIG, metavar="FILE",
        help=f"config file ({DEFAULT_CONFIG})",
    )  # fmt: skip
    p.add_argument(
        "--events",
        type=v.name_list(tuple(EVENTS)),
        default="exec,exit",
        metavar="LIST",
        help="comma-separated event kinds: exec (ring buffer), exit (perf buffer)",
    )
    p.add_argument(
        "-d", "--duration", type=v.number(0, v.DURATION_MAX_S, unit="seconds"), default=0.0,
        metavar="SECONDS",
        help="stop after N seconds (0: run until Ctrl-C)",
    )  # fmt: skip
    p.add_argument(
        "--ring-pages", type=v.power_of_two(1 << 18), default=64, metavar="PAGES",
        help="BPF ring buffer pages, a power of two (default 64)",
    )  # fmt: skip
    p.add_argument(
        "--perf-pages", type=v.power_of_two(1 << 16), default=8, metavar="PAGES",
        help="perf buffer pages per CPU, a power of two (default 8)",
    )  # fmt: skip
    p.add_argument(
        "--stats-interval", type=v.number(0, 86400, unit="seconds"), default=10.0,
        metavar="SECONDS",
        help="a line with events/s and events lost every SECONDS (default 10; 0: never)",
    )  # fmt: skip
    p.add_argument(
        "-q", "--quiet", action="store_true",
        help="no attach/detach or rate lines (the start line, errors and final counts stay)",
    )  # fmt: skip
    add_export_args(p, quiet=False)
    add_metrics_arg(p)
    p.set_defaults(func=run)


class BpfSources:
    """The BPF program and its two consumers, feeding ``bridge.submit``."""

    def __init__(self, bridge: KmesBridge, kinds: set[str], ring_pages: int, perf_pages: int):
        from ringtool.programs.loader import compile_program
        from ringtool.readers.perfbuf import PerfBuffer
        from ringtool.readers.ringbuf import RingBuffer

        self.bridge = bridge
        self.obj = compile_program(
            "kmes_bridge.c",
            defines={
                "RINGTOOL_RING_PAGES": ring_pages,
                "KMES_WANT_EXEC": int("exec" in kinds),
                "KMES_WANT_EXIT": int("exit" in kinds),
            },
        )
        self.consumers: list[Any] = []
        self._ring_drops: list[int] = []
        self.events = 0  # events taken from the BPF buffers
        self.lost = 0  # events the kernel could not buffer (ring reservations, perf lost)
        self.ring = RingBuffer(self.obj[b"kmes_events"], self._on_ring)
        self.consumers.append(self.ring)
        self.perf = PerfBuffer(
            self.obj[b"kmes_perf"], self._on_perf, self._on_lost, page_cnt=perf_pages
        )
        self.consumers.append(self.perf)
        self._ep = select.epoll()
        for c in self.consumers:
            self._ep.register(c.epoll_fd(), select.EPOLLIN)

    def _on_ring(self, data: memoryview) -> None:
        cpu, etype = BRIDGE_PREFIX.unpack_from(data)
        self.events += 1
        self.bridge.submit(cpu, L.ORIGIN_RINGBUF, etype, bytes(data[BRIDGE_PREFIX.size :]))

    def _on_perf(self, cpu: int, data: memoryview) -> None:
        _cpu, etype = BRIDGE_PREFIX.unpack_from(data)
        self.events += 1
        self.bridge.submit(cpu, L.ORIGIN_PERF, etype, bytes(data[BRIDGE_PREFIX.size :]))

    def _on_lost(self, cpu: int, count: int) -> None:
        self.lost += count
        payload = _LOST.pack(L.ORIGIN_PERF, 0, count)
        self.bridge.submit(cpu, L.ORIGIN_BRIDGE, EVENT_LOST, payload)

    def pump(self, timeout_ms: int) -> None:
        """Wait up to ``timeout_ms`` for data, then consume everything available."""
        self._ep.poll(timeout_ms / 1000)
        for c in self.consumers:
            c.consume()
        for note in self.perf.check_cpus():  # CPU hotplug: at most one sysfs read per s
            print(f"ringtool bridge: {printable(note)}", file=sys.stderr, flush=True)
        drops = self.ring.dropped()  # failed ring reservations, per CPU
        if len(self._ring_drops) != len(drops):
            self._ring_drops = [0] * len(drops)
        for cpu, n in enumerate(drops):
            if n > self._ring_drops[cpu]:
                self.lost += n - self._ring_drops[cpu]
                payload = _LOST.pack(L.ORIGIN_RINGBUF, 0, n - self._ring_drops[cpu])
                self.bridge.submit(cpu, L.ORIGIN_BRIDGE, EVENT_LOST, payload)
                self._ring_drops[cpu] = n

    def close(self) -> None:
        self._ep.close()
        for c in self.consumers:
            c.close()
        self.obj.cleanup()


class RateLine:
    """The periodic line: every ``interval`` seconds the events taken from BPF and lost
    in the kernel since the previous line (counters are totals; the deltas are shown)."""

    def __init__(self, interval: float, now: float) -> None:
        self.interval = interval
        self._at, self._events, self._lost = now, 0, 0

    def due(self, now: float, events: int, lost: int, consumers: int) -> str | None:
        """The line if ``interval`` has passed since the previous one, else None."""
        elapsed = now - self._at
        if elapsed < self.interval:
            return None
        n, k = events - self._events, lost - self._lost
        self._at, self._events, self._lost = now, events, lost
        rate = n / elapsed
        rate_s = f"{rate:,.0f}" if rate >= 10 else f"{rate:.1f}"
        plural = "" if consumers == 1 else "s"
        return (
            f"{n:,} events in {elapsed:.1f} s ({rate_s}/s), {k:,} lost in the kernel, "
            f"{consumers} consumer{plural}"
        )


def _say(line: str) -> None:
    print(f"ringtool bridge: {printable(line)}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    require_bpf_privileges("ringtool bridge")
    # A consumer that closes its socket early must cost it an EPIPE, not kill the bridge
    # (the CLI sets SIGPIPE to SIG_DFL for `| head`; the attach server also sends with
    # MSG_NOSIGNAL).
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    try:
        return _run(args)
    except (RingtoolError, OSError, KeyboardInterrupt):
        raise  # one line from ringtool.cli.main
    except Exception as exc:  # a dying bridge says why in one line, never a traceback
        why = printable(f"{type(exc).__name__}: {exc}")
        print(f"ringtool bridge: stopped by an internal error: {why}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    kinds = set(args.events)  # flag values were checked while parsing
    capacity = args.capacity
    bridge = KmesBridge(
        online_cpus(), socket_path=args.socket, capacity=capacity, config_path=args.config
    )
    bridge.install_signal_handlers()
    consumers = ConsumerLog()
    bridge.on_attach = None if args.quiet else consumers.attached
    from ringtool.export.bridge_hook import bridge_hook

    hook = bridge_hook(args, bridge)  # --export/--metrics: taps bridge.submit
    sources = BpfSources(bridge, kinds, args.ring_pages, args.perf_pages)
    try:
        sources.pump(0)  # events flowing already land in the boot buffers (docs/kmes.md section 9)
        bridge.flush()
        hook.flush()
        bridge.start()
        print(
            f"ringtool bridge: serving {v.shown(args.socket)}: {len(bridge.cpus)} CPUs x "
            f"{bridge.capacity} bytes, events {','.join(sorted(kinds))}; Ctrl-C stops",
            file=sys.stderr,
            flush=True,
        )
        end = time.monotonic() + args.duration if args.duration > 0 else None
        quiet = args.quiet or not args.stats_interval
        rate = None if quiet else RateLine(args.stats_interval, time.monotonic())
        while not bridge.stop_requested and (end is None or time.monotonic() < end):
            sources.pump(100)
            bridge.flush()
            while bridge.notes:  # CPU hotplug: a CPU given a buffer (announced to readers)
                _say(bridge.notes.popleft())
            for line in consumers.poll():
                _say(line)
            if rate is not None:
                stat = rate.due(
                    time.monotonic(), sources.events, sources.lost, len(consumers.consumers)
                )
                if stat is not None:
                    _say(stat)
            hook.flush()
            try:
                if bridge.service():
                    print(f"ringtool bridge: resized to {bridge.capacity}", file=sys.stderr)
            except KmesError as exc:
                why = printable(str(exc))
                print(f"ringtool bridge: reload refused, keeping buffers: {why}", file=sys.stderr)
        sources.pump(0)
        bridge.flush()
    finally:
        stats = bridge.stats()
        sources.close()
        hook.close(stats)  # the rest handed over and drained: every event counted
        bridge.close()
        consumers.close()
    for cpu, s in stats.items():
        print(
            f"cpu {cpu}: {s['written']} events written, {s['dropped']} dropped, "
            f"{s['overwritten']} overwritten, {s['wakes']} wakes",
            file=sys.stderr,
        )
    return 0
