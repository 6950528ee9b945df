"""Command-line values, checked while parsing: every bad value is one line naming the flag.

Each function here builds an argparse ``type=`` callable (or is one). A bad value raises
:class:`argparse.ArgumentTypeError` with a message that says what is wrong and what is
allowed; :class:`ringtool.cli.parser.ArgumentParser` prints it as the single line
``ringtool SUBCOMMAND: argument FLAG: MESSAGE`` and exits with status 2. So every value
is refused before a privilege check, an import of BCC or a BPF program load. Checks
that involve more than one flag raise :class:`ringtool.errors.UsageError` from the
subcommand's ``check(args)`` (same line, same status; see :mod:`ringtool.cli.main`).

Numbers: NaN and infinities are refused everywhere; ranges are inclusive, and every
number a flag takes has an upper bound (a duration at most :data:`DURATION_MAX_S`), so
no value the parser takes overflows a wait, a datetime or a struct later. Strings: a
value that was not UTF-8 on the command line (Python keeps it as surrogate escapes)
is refused where the kernel or a file format needs text; a regular expression is
compiled here, its every failure (a syntax error, a repeat count too large, nesting too
deep) one line. Paths are :mod:`ringtool.cli.validate_paths`'s. A value in a message
is cut to :data:`SHOWN_MAX` characters.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Sequence
from typing import NoReturn, TypeVar

from ringtool.errors import RingtoolError
from ringtool.event.safe_text import printable

T = TypeVar("T")

#: The kernel keeps 15 bytes of a task's name (TASK_COMM_LEN 16, with the NUL).
COMM_MAX = 15
#: Interface names: IFNAMSIZ 16, with the NUL.
IFNAME_MAX = 15
#: sun_path of a sockaddr_un holds 108 bytes, with the NUL.
SOCKET_PATH_MAX = 107
#: Linux's PID_MAX_LIMIT (4M) bounds every pid.
PID_MAX = 4 * 1024 * 1024
#: A regular expression's length at most (a process name has 15 bytes).
REGEX_MAX = 4096
#: A path or value quoted in a message: at most this many characters.
SHOWN_MAX = 120
#: Seconds in a day: the longest wait at the end of a run (``--export-drain``).
DAY_S = 86_400
#: The longest run (``-d``) and any other duration a flag takes, in seconds: a year.
#: Far below what a wait can be given (``threading.TIMEOUT_MAX``, about 292 years) or a
#: datetime hold, so no value the parser takes overflows later.
DURATION_MAX_S = 366 * DAY_S
#: Where ``--metrics PORT`` listens when no address is given: this machine only.
LOCAL_HOST = "127.0.0.1"


def bad(message: str) -> NoReturn:
    raise argparse.ArgumentTypeError(message)


def shown(text: str) -> str:
    """``text`` as a message quotes it: printable, and cut in the middle to
    :data:`SHOWN_MAX` characters (the length said) when longer."""
    if len(text) > SHOWN_MAX:
        half = SHOWN_MAX // 2
        text = f"{text[:half]}...{text[-half:]} ({len(text):,} characters)"
    return printable(text)


def checked(check: Callable[[str], T]) -> Callable[[str], T]:
    """A ``type=`` from ``check``, a function of a lower layer that raises a
    :class:`~ringtool.errors.RingtoolError` (an ExportError, ...) for a bad value."""

    def parse(text: str) -> T:
        try:
            return check(text)
        except RingtoolError as exc:
            bad(str(exc))

    return parse


def _fmt(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() and abs(v) < 1e15 else f"{v:g}"


def number(
    lo: float | None = None,
    hi: float | None = None,
    *,
    above: float | None = None,
    integer: bool = False,
    unit: str = "",
) -> Callable[[str], float]:
    """A ``type=`` for a finite number (an ``int`` when ``integer``) with
    ``lo <= v <= hi`` and ``v > above`` where given; ``unit`` is named in messages."""
    kind = "an integer" if integer else "a number"
    rules = []
    if above is not None:
        rules.append(f"> {_fmt(above)}")
    if lo is not None:
        rules.append(f">= {_fmt(lo)}")
    if hi is not None:
        rules.append(f"<= {_fmt(hi)}")
    want = f"{kind}{' ' + ' and '.join(rules) if rules else ''}{' ' + unit if unit else ''}"

    def parse(text: str) -> float:
        try:
            v: float = int(text, 10) if integer else float(text)
        except ValueError:
            bad(f"{shown(repr(text))} is not {kind}: give {want}")
        if not math.isfinite(v):
            bad(f"{shown(repr(text))} is not finite: give {want}")
        if (above is not None and v <= above) or (lo is not None and v < lo):
            bad(f"{shown(text)} is too small: give {want}")
        if hi is not None and v > hi:
            bad(f"{shown(text)} is too large: give {want}")
        return v

    parse.__name__ = "number"
    return parse


def integer(lo: int | None = None, hi: int | None = None, unit: str = "") -> Callable[[str], int]:
    """A ``type=`` for an integer in ``lo..hi``."""
    check = number(lo, hi, integer=True, unit=unit)

    def parse(text: str) -> int:
        return int(check(text))

    return parse


def power_of_two(hi: int, unit: str = "pages") -> Callable[[str], int]:
    """A ``type=`` for a power of two in ``1..hi`` (ring and perf buffer page counts)."""
    check = integer(1, hi, unit)

    def parse(text: str) -> int:
        n = check(text)
        if n & (n - 1):
            bad(f"{n} is not a power of two: give 1, 2, 4, ... {hi:,} {unit}")
        return n

    return parse


_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def ring_bytes(lo: int, hi: int) -> Callable[[str], int]:
    """A ``type=`` for a ring size in bytes, ``K``/``M``/``G`` allowed (``64K``): a power
    of two in ``lo..hi``."""

    def parse(text: str) -> int:
        t = text.strip().upper().removesuffix("B").removesuffix("I")
        unit = t[-1:] if t[-1:] in ("K", "M", "G") else ""
        digits = t[: len(t) - len(unit)]
        if not (digits.isascii() and digits.isdigit() and len(digits) <= 12):
            bad(f"{shown(repr(text))} is not a size: give bytes, e.g. 65536, 64K or 1M")
        n = int(digits) * _SUFFIX[unit]
        if not lo <= n <= hi or n & (n - 1):
            bad(
                f"{shown(text)} is not a power of two from {lo // 1024}K to {hi >> 20}M: "
                "e.g. 64K or 1M"
            )
        return n

    return parse


_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": DAY_S}


def size_or_duration(text: str) -> tuple[int | None, float | None]:
    """A ``type=`` for a size (``100M``, ``1G``: bytes, at least 64K) or a duration
    (``30s``, ``10m``, ``1h``, ``1d``: at least 1 s): ``(bytes, None)`` or
    ``(None, seconds)`` (``--record-rotate``)."""
    t = text.strip()
    low = t.lower()
    if low[-1:] in _SECONDS and low[:-1].isascii() and low[:-1].isdigit() and len(low) <= 9:
        secs = int(low[:-1]) * _SECONDS[low[-1]]
        if not 1 <= secs <= DURATION_MAX_S:
            bad(f"{shown(text)} is not a duration from 1s to 366d")
        return None, float(secs)
    u = t.upper().removesuffix("B").removesuffix("I")
    unit = u[-1:] if u[-1:] in ("K", "M", "G") else ""
    digits = u[: len(u) - len(unit)]
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 12):
        bad(f"{shown(repr(text))} is neither a size (100M, 1G) nor a duration (30s, 10m, 1h)")
    n = int(digits) * _SUFFIX[unit]
    if not 1 << 16 <= n <= 1 << 50:
        bad(f"{shown(text)} is not a size from 64K to 1P")
    return n, None


def utf8(text: str, what: str) -> bytes:
    """``text`` as the bytes given on the command line; refused unless UTF-8."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        bad(f"{what} {os.fsencode(text)!r} is not UTF-8 text")


def comm(text: str) -> str:
    """A process name as the kernel stores it: 1..15 bytes of UTF-8 (a longer name
    would never match: the kernel cuts names to 15 bytes)."""
    raw = utf8(text, "the name")
    if not raw:
        bad("the name is empty")
    if len(raw) > COMM_MAX:
        cut = raw[:COMM_MAX].decode("utf-8", "ignore")
        bad(
            f"{shown(repr(text))} is {len(raw)} bytes: the kernel keeps {COMM_MAX} bytes of a "
            f"process name, so it never matches; give {cut!r}"
        )
    return text


#: The largest uid: (uid_t)-1 means "no uid" to the kernel.
UID_MAX = 2**32 - 2


def uid(text: str) -> int:
    """A user: a uid ``0..UID_MAX`` or the name of a user known to this system."""
    if text.isascii() and text.isdigit():
        n = int(text) if len(text) <= 10 else UID_MAX + 1
        if n > UID_MAX:
            bad(f"{shown(text)} is too large: give a uid <= {UID_MAX:,} or a user name")
        return n
    import pwd

    name = utf8(text, "the user name").decode()
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        bad(f"{shown(repr(text))} is neither a uid nor a known user name")


def regex(text: str) -> re.Pattern[str]:
    """A Python regular expression (``re`` syntax) of at most :data:`REGEX_MAX`
    characters, compiled."""
    if len(text) > REGEX_MAX:
        bad(f"the expression is {len(text):,} characters: give at most {REGEX_MAX:,}")
    try:
        return re.compile(text)
    except re.error as exc:
        bad(f"{shown(repr(text))} is not a regular expression: {exc}")
    except OverflowError as exc:  # a{99999999999}
        bad(f"{shown(repr(text))} is not a usable regular expression: {exc}")
    except RecursionError:  # thousands of nested groups
        bad(f"{shown(repr(text))} nests too deeply: give a simpler expression")


def ifname(text: str) -> str:
    """A network interface name as the kernel allows it (dev_valid_name): 1..15 bytes,
    not ``.`` or ``..``, no ``/``, ``:`` or white space."""
    raw = utf8(text, "the interface name")
    if (
        not raw
        or len(raw) > IFNAME_MAX
        or text in (".", "..")
        or any(c in text for c in "/: \t\n\r\v\f")
    ):
        bad(
            f"{shown(repr(text))} is not an interface name (1..{IFNAME_MAX} bytes, "
            "no '/', ':' or space)"
        )
    return text


def addr_port(text: str) -> tuple[str, int]:
    """``[ADDR:]PORT``: ``9464`` or ``:9464`` listen on 127.0.0.1 only; another address
    is given explicitly (``0.0.0.0:9464`` for every IPv4 interface, ``[::1]:9464``)."""
    host, _, port_s = text.rpartition(":")
    if not (port_s.isascii() and port_s.isdigit() and len(port_s) <= 5) or not (
        0 < int(port_s) < 65536
    ):
        bad(f"{shown(repr(text))}: give [ADDR:]PORT, e.g. 9464 or 127.0.0.1:9464")
    host = host.strip("[]") or LOCAL_HOST
    try:
        import ipaddress  # here: its import costs every start-up milliseconds

        ipaddress.ip_address(host)
    except ValueError:
        if host != "localhost":
            bad(f"{shown(repr(host))} is not an IP address: give [ADDR:]PORT")
    return host, int(port_s)


def kmes_capacity(text: str) -> int:
    """A KMES buffer size: bytes with an optional K/M/G suffix, a power of two within
    the KMES limits (:func:`ringtool.kmes.layout.check_capacity`)."""
    from ringtool.errors import KmesCapacityError
    from ringtool.kmes.config import parse_size
    from ringtool.kmes.layout import check_capacity

    try:
        size = parse_size(text)
    except ValueError:
        bad(f"{shown(repr(text))} is not a size: give bytes, e.g. 1048576 or 1M")
    try:
        return check_capacity(size)
    except KmesCapacityError as exc:
        bad(str(exc))


def name_list(
    choices: Sequence[str], name: Callable[[str], str | None] | None = None
) -> Callable[[str], tuple[str, ...]]:
    """A ``type=`` for a comma-separated, non-empty list of ``choices`` (duplicates
    dropped, order kept). ``name``: the choice a given word means (None: none; default:
    the word itself when it is a choice)."""

    def meant(word: str) -> str | None:
        if name is not None:
            return name(word)
        return word if word in choices else None

    def parse(text: str) -> tuple[str, ...]:
        words = [n.strip() for n in text.split(",") if n.strip()]
        unknown = [w for w in words if meant(w) is None]
        names = tuple(dict.fromkeys(m for w in words if (m := meant(w)) is not None))
        if unknown or not names:
            bad(
                f"unknown {shown(', '.join(map(repr, unknown))) or '(none)'}: choose from "
                f"{','.join(choices)}"
            )
        return names

    return parse


__all__ = [
    "COMM_MAX",
    "DAY_S",
    "DURATION_MAX_S",
    "LOCAL_HOST",
    "PID_MAX",
    "REGEX_MAX",
    "SHOWN_MAX",
    "UID_MAX",
    "addr_port",
    "bad",
    "checked",
    "comm",
    "ifname",
    "integer",
    "kmes_capacity",
    "name_list",
    "number",
    "power_of_two",
    "regex",
    "shown",
    "uid",
    "utf8",
]
