"""The dashboard's connections panel: the machine's TCP connections (``--events tcp``),
the busiest (bytes sent and received), the newest (by when they began) or the
longest-lived first (key ``o`` cycles the order, :data:`CONN_ORDERS`).

A closed connection is a record of the types in the registry's connections panel
(:data:`ringtool.event.registry.CONNECTIONS`: tcp, one record per connection at its
close, bpf/trace_tcp.c): its owner (pid, comm), local and remote address and port,
bytes sent (acknowledged) and received, and its duration. An open one is an entry of
the tcp source's ``conns`` hash (:mod:`ringtool.trace.reading.tcp_conns`, read each
interval while the panel is on screen): its owner once known (a passive connection's
at its close: ``-`` until then), addresses, and duration so far; its bytes are read
from the socket at the close only, so its TX and RX are ``-`` (and it sorts last among
the busiest). Connections open before the trace began are not followed.

:class:`Connections` keeps, of every connection since the trace started, the
:data:`KEEP` busiest, the :data:`KEEP` newest and the :data:`KEEP` longest-lived, as
one small numpy array (:data:`CONN`): each batch's records are copied into it and it
is pruned back (:func:`prune`) with a few numpy operations, no loop per record; only
the rows a frame shows are decoded. The ``/`` filter applies (the owner's comm); the
drill-down does not (the panel then says ``all processes``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.table import Table
from rich.text import Text

from ringtool.event.columns import cstr, cstrings
from ringtool.event.tcp_data import address
from ringtool.trace.dashboard.tui_panels import Column, data, shorten_middle, table
from ringtool.trace.dashboard.tui_view import CONN_ORDERS, ViewState
from ringtool.trace.units import count, duration_ns

#: Connections kept per order (more than the tallest panel shows; the ``/`` filter
#: picks among them).
KEEP = 256

#: A connection as the panel keeps it: when it began (``h.ts`` less its duration:
#: monotonic ns), its duration (ns), bytes sent + received, and what a row shows.
CONN = np.dtype([
    ("start", "<u8"), ("dur", "<u8"), ("bytes", "<u8"), ("tx", "<u8"), ("rx", "<u8"),
    ("pid", "<u4"), ("lport", "<u2"), ("rport", "<u2"), ("comm", "S16"),
    ("laddr", "u1", (16,)), ("raddr", "u1", (16,)), ("open", "u1"),
])  # fmt: skip
#: The field each order of :data:`CONN_ORDERS` sorts by, biggest first.
ORDER_FIELD = {"busiest": "bytes", "newest": "start", "longest-lived": "dur"}
NO_CONNS = np.empty(0, dtype=CONN)

Array = np.ndarray[Any, Any]


def connections(recs: Array, mine: Array | None = None) -> Array:
    """``struct trace_tcp`` records (a structured array of its view; those where
    ``mine`` is true, when given) as :data:`CONN`; only the columns read are copied."""

    def col(name: str, part: str = "") -> Array:
        c = recs[part][name] if part else recs[name]
        return c if mine is None else c[mine]

    out = np.empty(len(recs) if mine is None else int(mine.sum()), dtype=CONN)
    ts = col("ts", "h")
    out["dur"] = col("duration_ns")
    out["start"] = ts - np.minimum(out["dur"], ts)
    out["tx"], out["rx"] = col("tx_bytes"), col("rx_bytes")
    out["bytes"] = out["tx"] + out["rx"]
    out["pid"], out["comm"] = col("pid", "h"), col("comm", "h")
    out["lport"], out["rport"] = col("sport"), col("dport")
    out["laddr"], out["raddr"] = col("saddr"), col("daddr")
    out["open"] = 0
    return out


def open_connections(conns: Array, now_ns: int) -> Array:
    """``struct trace_tcp_conn`` rows (the tcp source's ``conns`` hash, read at
    ``now_ns``) as :data:`CONN`: open, their duration so far, no bytes (unknown until
    the close), no owner until it is known (a passive one's: at its close)."""
    out = np.zeros(len(conns), dtype=CONN)
    owned = conns["owned"] != 0
    out["start"] = conns["start_ns"]
    out["dur"] = np.uint64(now_ns) - np.minimum(conns["start_ns"], np.uint64(now_ns))
    out["pid"] = np.where(owned, conns["pid"], 0)
    out["comm"] = np.where(owned, conns["comm"], b"")
    out["lport"], out["rport"] = conns["sport"], conns["dport"]
    out["laddr"], out["raddr"] = conns["saddr"], conns["daddr"]
    out["open"] = 1
    return out


def _top(values: Array, k: int) -> Array:
    """Indices of ``k`` of the biggest ``values`` (all of them when there are fewer)."""
    if len(values) <= k:
        return np.arange(len(values))
    return np.argpartition(values, len(values) - k)[len(values) - k :]


def prune(conns: Array, keep: int = KEEP) -> Array:
    """The rows of ``conns`` among the ``keep`` biggest of any order's field (their
    positions kept): what the panel can show, in any order, of ``conns``."""
    if len(conns) <= keep:
        return conns
    idx = np.unique(np.concatenate([_top(conns[f], keep) for f in ORDER_FIELD.values()]))
    kept: Array = conns[idx]
    return kept


def ordered(conns: Array, order: str, rows: int, comms: str = "") -> Array:
    """The first ``rows`` of ``conns`` in ``order`` (biggest first; ties: the newest
    first, then by pid), of the owners whose comm has ``comms`` (empty: all)."""
    if comms and len(conns):
        names = cstrings(conns["comm"]).values
        conns = conns[np.fromiter((comms in n for n in names), dtype=bool, count=len(conns))]
    key = conns[ORDER_FIELD[order]].astype(np.int64)
    idx = np.lexsort((conns["pid"], -conns["start"].astype(np.int64), -key))
    return conns[idx[:rows]]


class Connections:
    """The connections of the records of ``type_ids`` (each viewed as ``dtype``, the
    types' ``struct trace_tcp``) since the start (see the module doc)."""

    def __init__(self, type_ids: Sequence[int], dtype: np.dtype[Any]) -> None:
        self.type_ids = np.array(type_ids, dtype=np.uint32)
        self.dtype = dtype
        self.kept = NO_CONNS  # replaced whole, never changed in place (a pause keeps it)
        self.closed = 0  # connections seen in all
        self.open: Array | None = None  # the open ones at the last tick (None: not read)

    def add_batch(self, arr: Array) -> None:
        """Keep the connections of a batch of ``struct trace_event`` records."""
        mine = np.isin(arr["h"]["type"], self.type_ids)
        if not mine.any():
            return
        new = connections(arr.view(self.dtype), None if mine.all() else mine)
        self.closed += len(new)
        self.kept = prune(np.concatenate([self.kept, new]))

    def set_open(self, conns: Array | None, now_ns: int = 0) -> None:
        """The open connections (``struct trace_tcp_conn`` rows read at ``now_ns``;
        None: not read)."""
        self.open = None if conns is None else prune(open_connections(conns, now_ns))


def endpoint(raw: Array, port: int) -> str:
    """``a.b.c.d:port``, or ``[v6]:port``, of a 16-byte address."""
    text = address(bytes(raw))
    return f"[{text}]:{port}" if ":" in text else f"{text}:{port}"


def lifetime(ns: int) -> str:
    """A connection's duration: scaled below 1000 s, else ``H:MM:SS`` (7 characters
    up to 10 hours)."""
    if ns < 1000 * 10**9:
        return duration_ns(ns)
    s = ns // 10**9
    return f"{s // 3600}:{s // 60 % 60:02}:{s % 60:02}"


#: The panel's columns: (name, justify, least width); REMOTE takes what is left, and
#: is cut in its middle (its port stays) where it has too little.
COLUMNS: tuple[tuple[str, str, int], ...] = (
    ("PID", "right", 7), ("COMM", "left", 4), ("LOCAL", "left", 5), ("REMOTE", "left", 15),
    ("TX", "right", 5), ("RX", "right", 5), ("DUR", "right", 7),
)  # fmt: skip
#: The columns left out first where the panel is narrow (the rest stay in order).
DROP_ORDER = ("LOCAL", "PID", "DUR", "TX", "COMM")
#: The widest a comm or a local address is shown (longer ones are cut with …); in a
#: panel narrower than :data:`NARROW`, a comm is cut at :data:`NARROW_COMM`.
COMM_WIDTH, LOCAL_WIDTH, NARROW, NARROW_COMM = 16, 21, 60, 8


def fit_columns(widths: dict[str, int], width: int) -> tuple[list[str], int]:
    """The names of the columns that fit ``width`` when each takes its ``widths``
    (at least :data:`COLUMNS`'), 2 of padding and 1 between it and the next, leaving
    out :data:`DROP_ORDER`'s first; and the room REMOTE has then."""
    names = [c[0] for c in COLUMNS]
    need = {name: max(least, len(name), widths.get(name, 0)) + 3 for name, _, least in COLUMNS}
    for name in DROP_ORDER:
        if sum(need[n] for n in names) - 1 <= width:
            break
        names.remove(name)
    return names, width + 1 - sum(need[n] for n in names if n != "REMOTE") - 3


def conns_table(
    kept: Array, closed: int, opened: Array | None, view: ViewState, rows: int, width: int
) -> Table:
    """The panel in ``width`` columns and ``rows`` rows of ``kept`` of the ``closed``
    connections seen and the ``opened`` ones (None: not read), now's or those when
    the dashboard paused."""
    order = CONN_ORDERS[view.conn_order]
    every = "  all processes" if view.drilling else ""
    both = kept if opened is None else np.concatenate([kept, opened])
    shown = ordered(both, order, rows, "" if view.drilling else view.filter)
    cells: list[dict[str, str | Text]] = []
    for r in shown:
        comm = data(cstr(bytes(r["comm"])))
        comm.truncate(COMM_WIDTH if width >= NARROW else NARROW_COMM, overflow="ellipsis")
        local = shorten_middle(endpoint(r["laddr"], int(r["lport"])), LOCAL_WIDTH)
        cells.append({
            "PID": str(int(r["pid"])) if r["pid"] else "-", "COMM": comm, "LOCAL": local,
            "REMOTE": endpoint(r["raddr"], int(r["rport"])),
            "TX": "-" if r["open"] else count(int(r["tx"])),
            "RX": "-" if r["open"] else count(int(r["rx"])), "DUR": lifetime(int(r["dur"])),
        })  # fmt: skip
    widths = {n: max((len(c[n]) for c in cells), default=0) for n in ("COMM", "LOCAL")}
    names, room = fit_columns(widths, width)
    cols: list[Column] = [c for c in COLUMNS if c[0] in names]
    now = "" if opened is None else f", {count(len(opened))} open"
    t = table(f"tcp: {order} (o){every}  {count(closed)} closed{now}", *cols, flex="REMOTE")
    for c in cells:
        c["REMOTE"] = shorten_middle(str(c["REMOTE"]), room)
        t.add_row(*(c[n] for n in names))
    return t


__all__ = [
    "COLUMNS", "CONN", "KEEP", "NO_CONNS", "ORDER_FIELD", "Connections", "connections",
    "conns_table", "endpoint", "fit_columns", "lifetime", "open_connections", "ordered",
    "prune",
]  # fmt: skip
