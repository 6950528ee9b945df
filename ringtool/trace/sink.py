"""The two interfaces of the trace loop's consumers of records.

An :class:`Output` is what the user watches (JSON lines, CSV, columns, the dashboard,
or nothing but a summary); a run has exactly one. A :class:`Sink` is where records go
besides (``--pcap``, ``--kmes``, ``--export``/``--metrics``); a run has any number.
The loop (:mod:`ringtool.trace.runner`) calls both in this order: ``open`` (outputs),
``start``, then per batch ``batch`` / ``publish`` with the same records, per interval
``tick`` (sinks, whose notes go to the output) and ``stats``, and at the end ``close``
(sinks first, so their final counts are in the summary) and ``summary``.

Both get a batch as one :class:`~ringtool.event.records.Records`: the ``struct
trace_event`` records and the net packets (``struct trace_net`` and their bytes) as
structured arrays of ``bpf/trace_event.h`` (:mod:`ringtool.event.layout`). It is
valid only during the call (its events are often a view of a mapped ring, consumed
after it): whatever keeps records past the call copies them. Both protocols are
generic in the statistics they are given (``S``).
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from ringtool.event.records import Records

#: The run's statistics as the loop hands them on: the protocols take any type (the
#: loop's is :class:`ringtool.trace.report.stats.TraceStats`: ``Output[TraceStats]``), so
#: this module depends on no statistics of its own.
S = TypeVar("S", contravariant=True)
#: A drill-down: what it is of (a pid, or a comm for every process of that name) and
#: the pids whose syscalls it adds up.
Drill = tuple[int | str, frozenset[int]]


class Output(Protocol[S]):
    """What the user watches. ``input_fd`` is a file descriptor the loop waits on for
    keys (-1: none; then :meth:`handle_input` is never called); ``drill`` what the
    user drilled into (None: nothing): a :data:`Drill`, whose processes' syscall
    histograms the loop reads each interval; ``wants_cost`` whether it shows the BPF
    programs' run time now (the dashboard's cost panel): the loop keeps the kernel's
    BPF run-time statistics on only then, unless ``--cost``/``--no-cost`` decide;
    ``wants_conns`` whether it shows the open TCP connections (the dashboard's
    connections panel): the loop reads them each interval only then."""

    @property
    def input_fd(self) -> int: ...
    @property
    def drill(self) -> Drill | None: ...
    @property
    def wants_cost(self) -> bool: ...
    @property
    def wants_conns(self) -> bool: ...
    def open(self) -> None: ...
    def close(self) -> None: ...
    def start(self, sources: list[str], notes: list[str]) -> None: ...
    def batch(self, records: Records) -> None:
        """A batch of records: often a view of a mapped ring, valid during the call
        only (the loop then consumes the read): copy what is kept."""
        ...

    def stats(self, stats: S) -> None: ...
    def summary(self, stats: S) -> None: ...
    def note(self, text: str) -> None: ...
    def step(self, text: str) -> None:
        """Start-up: what is being done now (compiling a source, attaching)."""
        ...

    def handle_input(self) -> bool:
        """Read the pending keys; True when the user asked to quit."""
        ...


class OutputBase:
    """Defaults for outputs that read no keys and have no terminal to set up."""

    @property
    def input_fd(self) -> int:
        return -1

    @property
    def drill(self) -> Drill | None:
        return None

    @property
    def wants_cost(self) -> bool:
        return False

    @property
    def wants_conns(self) -> bool:
        return False

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def handle_input(self) -> bool:
        return False

    def step(self, text: str) -> None:
        pass


class Sink(Protocol[S]):
    """Where records go besides the output. :meth:`publish` may raise
    :class:`~ringtool.errors.RingtoolError` (the trace ends with its message);
    :meth:`close` is called once, with the final stats (None when the run failed
    before it had any), and may raise the same for a write it could not complete."""

    def publish(self, records: Records) -> None:
        """As :meth:`Output.batch`: ``records`` are valid during the call only."""
        ...

    def tick(self, stats: S) -> list[str]:
        """Once per interval, after the kernel counters were taken: notes to show."""
        ...

    def close(self, stats: S | None) -> None: ...


__all__ = ["Drill", "Output", "OutputBase", "Records", "Sink"]
