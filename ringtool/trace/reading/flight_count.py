"""How many events a flight recorder's rings overwrote before a dump wrote them.

A flight recorder (:mod:`ringtool.trace.recorder.flight`) keeps the newest SIZE bytes a CPU: an
event that the programs emitted is either written by a dump, dropped (the output
failed: ``dropped``), lost (perf ``lost``) or overwritten by newer ones before a dump
came. This module is the arithmetic of the last, on plain numbers:

* perf ``write_backward`` rings (:func:`perf_overwritten`): ``bpf/percpu_ringbuf.h``
  counts each record the ring took per CPU (``RT_PCPU_OUTPUTS_FD``); the dump reads the
  counters *before* it pauses and copies the rings, so a record counted there is in the
  copy unless overwritten, and ``outputs - written - damaged`` never exceeds the truth;
  it is the truth when no program ran meanwhile (the sources detached before the dump);
* overwrite RINGBUF (:func:`ringbuf_overwritten`): the reader counts each record it
  skipped whose header it saw (:attr:`ringtool.RingBuffer.overwritten`); a span the
  kernel rewrote before any of its headers was read is only bytes
  (``overwritten_uncounted_bytes``), and holds at least ``bytes // record span``
  records (no record is larger than the span given).

Where the count is not exact it is a lower bound, and every place that shows it names
it so: :attr:`Overwritten.key` is ``overwritten`` or ``overwritten_min``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Overwritten:
    """Events overwritten before a dump wrote them, as of the last dump.

    ``per_cpu``: per CPU (perf rings; empty where only a total is known);
    ``total``: all of them; ``exact``: the true count, else a lower bound (between
    dumps the kernel goes on overwriting unseen, so only a final dump taken with the
    sources detached is exact); ``damaged``: records the last dump's copy holds that
    are too short to be events (never written, not in ``total``; 0 unless the layout
    is wrong)."""

    total: int = 0
    exact: bool = False
    per_cpu: dict[int, int] = field(default_factory=dict)
    damaged: int = 0

    @property
    def key(self) -> str:
        """The name of the count wherever it is shown: ``overwritten`` when exact,
        ``overwritten_min`` when a lower bound."""
        return "overwritten" if self.exact else "overwritten_min"

    def record(self) -> dict[str, object]:
        """The summary's fields: the total under :attr:`key`, per CPU where known, and
        ``damaged`` when any."""
        out: dict[str, object] = {self.key: self.total}
        if self.per_cpu:
            out[f"{self.key}_per_cpu"] = {str(k): v for k, v in sorted(self.per_cpu.items())}
        if self.damaged:
            out["damaged"] = self.damaged
        return out

    def text(self) -> str:
        """``N overwritten`` or ``at least N overwritten``."""
        return f"{'' if self.exact else 'at least '}{self.total} overwritten"


def perf_overwritten(
    outputs: Sequence[int],
    written: Mapping[int, int],
    damaged: Mapping[int, int],
    *,
    exact: bool,
) -> Overwritten:
    """Per CPU ``outputs[cpu] - written[cpu] - damaged[cpu]`` (never below 0).

    ``outputs``: the records each CPU's perf ring took, read before the dump's copies
    (index = CPU); ``written``: per CPU, the records all dumps so far wrote;
    ``damaged``: per CPU, those in the last dump's copy too short to be events (the
    copy holds every record not overwritten yet, so one found by two dumps is one).
    ``exact``: no program ran since the counters
    were read (else a record written after that read makes a CPU's difference smaller
    than the truth, never larger: a lower bound)."""
    per_cpu = {
        cpu: max(0, n - written.get(cpu, 0) - damaged.get(cpu, 0)) for cpu, n in enumerate(outputs)
    }
    per_cpu = {cpu: n for cpu, n in per_cpu.items() if n}
    return Overwritten(sum(per_cpu.values()), exact, per_cpu, sum(damaged.values()))


def ringbuf_overwritten(
    counted: int, uncounted_bytes: int, record_span: int, *, exact: bool
) -> Overwritten:
    """The overwrite RINGBUF reader's count: ``counted`` records plus at least
    ``uncounted_bytes // record_span`` in the spans it could not count (``record_span``:
    the largest record, header and padding included). Exact only if ``exact`` (no
    program ran since the final read) and no span was left uncounted."""
    if record_span <= 0:
        raise ValueError(f"record_span must be positive, not {record_span}")
    return Overwritten(counted + uncounted_bytes // record_span, exact and not uncounted_bytes)


__all__ = ["Overwritten", "perf_overwritten", "ringbuf_overwritten"]
