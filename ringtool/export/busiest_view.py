"""The fleet table's two sections of busiest things (``collect``'s live view): per host
its top TCP connections by bytes and its disks (:mod:`ringtool.export.busiest`), as
rows of printable cells (process names and addresses are data: never terminal
control) for the rich table and the plain text blocks alike."""

from __future__ import annotations

from ringtool.event.safe_text import printable
from ringtool.export.fleet import Fleet

#: Connections shown per host in the table (``--json`` has :data:`~ringtool.export.busiest.TOP`).
TABLE_TOP = 3
CONN_COLUMNS = ("HOST", "COMM", "PID", "LOCAL", "REMOTE", "TX", "RX", "CLOSES")
DISK_COLUMNS = ("HOST", "DISK", "DEV", "IOPS", "MB/S", "P99_US", "REQUESTS")


def _endpoint(addr: str, port: int) -> str:
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


def _bytes(n: int) -> str:
    for unit in ("", "K", "M", "G", "T"):
        if n < 1024 or unit == "T":
            return f"{n:,}" if not unit else f"{n:.1f}{unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def conn_rows(fleet: Fleet) -> list[list[str]]:
    """Each host's top connections (host order, busiest first)."""
    rows = []
    for host in sorted(fleet.hosts):
        for (laddr, lport, raddr, rport), c in fleet.hosts[host].busiest.top(TABLE_TOP):
            rows.append([printable(host), printable(c.comm), str(c.pid),
                         printable(_endpoint(laddr, lport)), printable(_endpoint(raddr, rport)),
                         _bytes(c.tx), _bytes(c.rx), f"{c.closes:,}"])  # fmt: skip
    return rows


def disk_rows(fleet: Fleet) -> list[list[str]]:
    """Each host's disks (host, then device order): the last interval's rates and p99."""
    rows = []
    for host in sorted(fleet.hosts):
        for dev, d in sorted(fleet.hosts[host].busiest.disks.items()):
            rows.append([printable(host), printable(d.name or "-"), printable(dev),
                         f"{d.iops:,.0f}", f"{d.bytes_per_s / 1e6:,.1f}",
                         f"{d.p99_ns / 1000:,.0f}", f"{d.requests:,}"])  # fmt: skip
    return rows


__all__ = ["CONN_COLUMNS", "DISK_COLUMNS", "TABLE_TOP", "conn_rows", "disk_rows"]
