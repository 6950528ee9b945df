"""The keys of the ``--json`` lines that are not events: ``start`` and ``note`` (on
stderr), ``stats`` (stderr, once per interval), ``summary`` and ``hist`` (stdout, at the
end). ONE table (:data:`LINES`), as :mod:`ringtool.event.fields` is for the events:
each key's JSON type, unit and meaning; docs/schema.md and
docs/trace-events.schema.json are generated from both (:mod:`ringtool.trace.report.schema`).

Naming rule of every line: a quantity's key ends in its unit (``_s`` seconds, ``_us``
microseconds, ``_pct`` percent, ``_per_s`` a rate); latencies and durations are in
microseconds everywhere (``latency_us``, ``duration_us``, ``p99_us``), except the
histogram bucket bounds of ``hist`` (nanoseconds: the kernel's exact bounds); a
wall-clock time is seconds since the epoch (``ts``, and ``time`` of ``drops_at``).
"""

from __future__ import annotations

from typing import NamedTuple

JsonSchema = dict[str, object]


class Key(NamedTuple):
    """One key of a line: its ``name``, the JSON Schema of its value, its ``unit``
    (``""``: none), its meaning (``doc``) and whether every line of its kind has it."""

    name: str
    schema: JsonSchema
    unit: str
    doc: str
    required: bool = True


_INT: JsonSchema = {"type": "integer", "minimum": 0}
_NUM: JsonSchema = {"type": "number", "minimum": 0}
_OBJ: JsonSchema = {"type": "object"}
_STRS: JsonSchema = {"type": "array", "items": {"type": "string"}}
_COUNTS: JsonSchema = {"type": "object", "additionalProperties": _INT}
_CPU_COUNTS: JsonSchema = {"type": "array", "items": _INT}


def _objects(props: dict[str, JsonSchema]) -> JsonSchema:
    return {"type": "array", "items": {"type": "object", "properties": props,
                                       "required": list(props)}}  # fmt: skip


#: What a flight recorder's rings overwrote before a dump wrote it: ``overwritten``
#: where exact, else the lower bound ``overwritten_min`` (one of the two).
_OVERWRITTEN = (
    Key("overwritten", _INT, "", "events a flight recorder's rings overwrote (exact)", False),
    Key("overwritten_min", _INT, "", "a lower bound of the events overwritten", False),
)
#: The optional parts: present under the options that make them.
_OPTIONAL = (
    Key("ordering", _OBJ, "", "--ordered: the merge's out-of-order accounting", False),
    Key("rings", _OBJ, "", "the RINGBUF rings' sizes and switches (ring growth)", False),
    Key("export", _OBJ, "", "--export: the export's counters", False),
    Key("cost", _OBJ, "", "what tracing costs (CPU time of the BPF programs, ...)", False),
)

#: Line type -> its keys after ``type``, in output order.
LINES: dict[str, tuple[Key, ...]] = {
    "start": (
        Key("sources", _STRS, "", "the trace sources running (--events names)"),
        Key("notes", _STRS, "", "what the start-up found worth telling"),
    ),
    "note": (Key("text", {"type": "string"}, "", "a note (a source failed, a ring grew, ...)"),),
    "stats": (
        Key("uptime_s", _NUM, "s", "the interval's end, since reading started"),
        Key("events", _INT, "", "events so far"),
        Key("events_per_s", _NUM, "1/s", "events per second in the interval"),
        Key("per_source_per_s", {"type": "object", "additionalProperties": _NUM}, "1/s",
            "events per second in the interval, by source"),
        Key("per_cpu", {"type": "array", "items": _OBJ}, "",
            "per CPU: cpu, events_per_s, fill_pct, drops, drops_interval, lost"),
        Key("dropped", _INT, "", "events the kernel dropped so far (a ring was full)"),
        Key("lost", _INT, "", "events the perf buffers lost so far"),
        Key("dropped_interval", _INT, "", "events dropped in the interval"),
        Key("lost_interval", _INT, "", "events lost in the interval"),
        *_OVERWRITTEN,
        Key("malformed", _INT, "", "records too short to decode"),
        Key("top_syscalls", _objects({"syscall": {"type": "string"}, "count": _INT,
                                      "p99_us": _NUM}),
            "", "the 5 most called syscalls: name, calls, p99 latency (us)"),
        *_OPTIONAL,
    ),
    "summary": (
        Key("events", _INT, "", "events written"),
        Key("dropped", _INT, "", "events the kernel dropped (a ring was full)"),
        Key("lost", _INT, "", "events the perf buffers lost"),
        *_OVERWRITTEN,
        Key("overwritten_per_cpu", _COUNTS, "", "overwritten, by CPU", False),
        Key("overwritten_min_per_cpu", _COUNTS, "", "overwritten_min, by CPU", False),
        Key("malformed", _INT, "", "records too short to decode"),
        Key("duration_s", _NUM, "s", "how long the trace ran"),
        Key("by_type", _COUNTS, "", "events by type"),
        Key("dropped_by_source", _COUNTS, "", "drops by source"),
        Key("dropped_by_source_per_cpu", {"type": "object", "additionalProperties":
                                          _CPU_COUNTS}, "", "drops by source and CPU"),
        Key("dropped_per_cpu", _CPU_COUNTS, "", "drops by CPU"),
        Key("lost_per_cpu", _COUNTS, "", "losses by CPU (keys: CPU numbers)"),
        Key("drop_intervals", _INT, "", "intervals with drops or losses"),
        Key("drops_at", _objects({"uptime_s": _NUM, "time": _NUM, "dropped": _INT,
                                  "lost": _INT}),
            "", "the last intervals with drops: their end (uptime_s; time: seconds "
            "since the epoch) and counts"),
        Key("sources", _STRS, "", "the trace sources that ran"),
        *_OPTIONAL,
        Key("cpuwait", _OBJ, "", "--events cpuwait: the machine's run-queue waits (count, "
            "total_wait_us, p50_us, p99_us, buckets_us), the processes that waited longest "
            "(top) and what the kernel could not count (lost)", False),
    ),
    "hist": (
        Key("syscall", {"type": "string"}, "", "the syscall's name (a syscall's line)",
            required=False),
        Key("dev", {"type": "string"}, "", "the block device as major:minor (a disk's line)",
            required=False),
        Key("disk", {"type": "string"}, "", "the block device's name, or empty (a disk's "
            "line)", required=False),
        Key("count", _INT, "", "its calls or requests (every one, counted in the kernel)"),
        Key("p99_us", _NUM, "us", "its 99th percentile latency, 2 significant digits"),
        Key("p99_max_error", _NUM, "", "the p99 estimate's error bound (a fraction)"),
        Key("buckets", {"type": "array", "items": {"type": "array", "items": _INT,
                                                   "minItems": 3, "maxItems": 3}},
            "ns", "the used buckets: [low_ns, high_ns, count], bounds inclusive"),
    ),
}  # fmt: skip

_SLOTS: JsonSchema = {
    "type": "array",
    "items": {"type": "array", "items": _INT, "minItems": 3, "maxItems": 3},
}
#: ``cpuwait_hist`` (``--hist --json`` with ``--events cpuwait``), one per process and
#: one for the machine.
LINES["cpuwait_hist"] = (
    Key("pid", _INT, "", "the process (0: the whole machine)"),
    Key(
        "comm",
        {"type": "string"},
        "",
        "its group leader's name when its first wait was counted (empty for the machine)",
    ),
    Key("count", _INT, "", "its waits for a CPU"),
    Key("total_wait_us", _NUM, "us", "their total, exact to 0.1 us"),
    Key("p50_us", _NUM, "us", "the median wait (within its log2 slot)"),
    Key("p99_us", _NUM, "us", "the 99th percentile wait (within its log2 slot)"),
    Key(
        "buckets_us",
        _SLOTS,
        "us",
        "the used log2 slots: [low_us, high_us, count], inclusive, as runqlat prints them",
    ),
)

#: Where each line kind is written.
WHERE = {"start": "stderr", "note": "stderr", "stats": "stderr", "summary": "stdout",
         "hist": "stdout (--hist, after the summary)",
         "cpuwait_hist": "stdout (--hist with cpuwait, after the summary)"}  # fmt: skip

__all__ = ["LINES", "WHERE", "JsonSchema", "Key"]
