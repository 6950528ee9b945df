"""ringtool's exceptions: one class per thing that can go wrong, each saying what to do.

Every error ringtool raises on purpose derives from :class:`RingtoolError`, so a caller
can catch them all; the subclasses say *what* is wrong. Messages are one line and end
with the fix where there is one.
"""

from __future__ import annotations


class RingtoolError(Exception):
    """Base class of every error ringtool raises on purpose."""


class PrivilegeError(RingtoolError):
    """The operation needs root or CAP_BPF + CAP_PERFMON."""


class UsageError(RingtoolError, ValueError):
    """A command-line value or combination of flags is unusable; the message names the
    flag. The CLI prints it as one line and exits with status 2, before any BPF program
    is loaded."""


class CgroupPathError(UsageError):
    """A ``--cgroup`` path is not a usable cgroup v2 directory (missing, not a
    directory, not on cgroup2, or its level below the root cannot be known)."""


class InputFileError(RingtoolError, ValueError):
    """A file ringtool was given to read (credentials, a CA bundle, a config file) is
    not a regular file (a FIFO, a device, a directory) or is larger than ringtool reads
    of such a file. ``why`` is the reason without the path (the CLI names the flag and
    the path itself)."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


class KernelFeatureError(RingtoolError):
    """The running kernel lacks a feature (map type, helper, hook, tracefs, BTF)."""


class BpfSyscallError(RingtoolError, OSError):
    """bpf(2) failed; ``errno`` and ``command`` say which call and why."""

    def __init__(self, command: str, errno_: int, detail: str = "") -> None:
        import os

        self.command = command
        msg = f"bpf({command}) failed: {os.strerror(errno_)}"
        if detail:
            msg += f": {detail}"
        OSError.__init__(self, errno_, msg)

    def __str__(self) -> str:
        return str(self.strerror)


class UnsafeDirectoryError(RingtoolError):
    """A directory ringtool would create, lock or delete in (the bpffs pin root of
    ``ringtool mark``) is one another user could have made or may change: a symbolic
    link, not a directory, owned by another user, or writable by group or others.
    Nothing in it is used or deleted; the message names the path and the fix."""


class MapTypeError(RingtoolError, TypeError):
    """A map of the wrong type was given (e.g. a HASH map to RingBuffer)."""


class RingSizeError(RingtoolError, ValueError):
    """A ring size / page count is not a power of two (of pages), or out of range."""


class MmapError(RingtoolError, OSError):
    """mmap/munmap of a ring was refused by the kernel."""


class PerfEventOpenError(RingtoolError, OSError):
    """perf_event_open(2) was refused; the message names the sysctl or capability."""


class CorruptRecordError(RingtoolError):
    """A record header in a shared ring makes no sense (length, alignment, type).

    ``position`` is the consumer position of the bad record and ``dump`` a hex dump of
    the bytes around it. The consumer position is left *at* the bad record: nothing
    after it is consumed, nothing before it is lost.
    """

    def __init__(self, message: str, *, position: int, dump: str) -> None:
        super().__init__(f"{message} at position {position:#x}\n{dump}")
        self.position = position
        self.dump = dump


class ConsumerStateError(RingtoolError, RuntimeError):
    """An API call that the consumer's mode forbids (poll() with auto_callback, use
    after close(), use in a child process after ``fork()``)."""


class ConsumerPositionError(RingtoolError):
    """The shared consumer position of a ring (RINGBUF ``consumer_pos``, perf
    ``data_tail``) holds a value this consumer did not store: another process (or a
    stray write) changed it. The consumer walks from its own private position, never
    from the shared one; it has stored its own position back and counted the event
    (``scribbles`` of the ring). ``found`` is the value seen, ``expected`` ours.
    """

    def __init__(self, message: str, *, expected: int, found: int) -> None:
        super().__init__(message)
        self.expected = expected
        self.found = found


class ArgumentError(RingtoolError, ValueError):
    """A bad argument to a consumer or merge API: out of range (a negative limit, no
    CPU left to attach, a NaN window) or unusable (a dtype that cannot hold ring bytes,
    a callback that is not callable)."""


class BufferIndexError(ArgumentError, IndexError):
    """A ring / buffer index past the end (``consume_buffer(5)`` with 2 buffers)."""


class RecordSizeError(ArgumentError):
    """A user ring record (or the ring) of a size the kernel would refuse."""


class RingFullError(RingtoolError):
    """No room in a user ring now (or within the timeout): the BPF side has not drained."""


class ProducerStateError(RingtoolError, RuntimeError):
    """A user ring producer used wrongly: closed, or a record submitted twice."""


class RecordFormatError(RingtoolError, ValueError):
    """A record is too short for what is read from it (e.g. a timestamp offset past
    its end). The record itself is consumed; the error reports it."""


class PcapngFormatError(RingtoolError, ValueError):
    """A pcapng file is not one that :func:`ringtool.trace.writers.pcapng.read_pcapng` can read
    (no section header, big-endian, a block or option that runs past its end, a packet
    on an interface that was never described)."""


class RecordingError(RingtoolError, ValueError):
    """A recording (``ringtool trace --record``) cannot be read as one: not an Arrow IPC
    stream, a damaged or cut message (the message says after which batch, at which byte
    it stops), a stream of another format version or event layout, or a column that is
    not the layout's. Events before the damage were handed on; nothing after it is."""


class RecordingTruncated(RecordingError):
    """A recording ends before its end-of-stream marker: the recorder was killed (or the
    file was cut). ``batches`` whole batches and ``events`` events were read before
    byte ``offset``."""

    def __init__(self, path: str, batches: int, events: int, offset: int, why: str) -> None:
        super().__init__(
            f"{path}: {why} at byte {offset}, after batch {batches} ({events} events read): "
            "the recorder was killed, or the file was cut or damaged there; the events "
            "before it were read"
        )
        self.path, self.batches, self.events, self.offset = path, batches, events, offset


class KmesError(RingtoolError):
    """A KMES buffer, metadata page or attach exchange is malformed."""


class KmesCapacityError(KmesError, ValueError):
    """A KMES capacity is not a power of two or is outside the permitted range."""


class KmesFormatError(KmesError):
    """A KMES metadata page or event header is not in the KMES format (or was corrupted)."""


class KmesAttachError(KmesError):
    """The KMES attach exchange failed: no bridge socket, refused, or a bad reply."""


class KmesBridgeDiedError(KmesError):
    """The KMES bridge (the writer) a reader is attached to has exited (``pid``)."""

    def __init__(self, pid: int) -> None:
        super().__init__(f"bridge (pid {pid}) died")
        self.pid = pid


class ExportError(RingtoolError):
    """Exporting events or metrics failed: a bad ``--export``/``--metrics`` value, a
    broker that cannot be reached or refuses the credentials, a stream that is not
    ours (see ringtool.export)."""


class BadMessageError(ExportError):
    """A message read from the stream is not a well-formed ringtool message of the
    host its subject names. ``reason`` is one of a fixed set of short phrases (what
    ``collect`` counts per kind); ``detail`` says what was wrong in this message and
    may quote it (callers print it through :func:`ringtool.event.safe_text.printable`)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class BenchError(RingtoolError):
    """A benchmark could not run one of its parts: the system compiler (``cc``) failed
    on a bench's C source, or a traced child exited before it was ready."""


def hexdump(buf: bytes | bytearray | memoryview, *, base: int = 0, mark: int = -1) -> str:
    """Format ``buf`` as a classic 16-bytes-a-line hex dump; ``mark`` flags one offset."""
    out = []
    raw = bytes(buf)
    for off in range(0, len(raw), 16):
        chunk = raw[off : off + 16]
        hexpart = " ".join(f"{b:02x}" for b in chunk)
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        flag = " <--" if off <= mark < off + 16 else ""
        out.append(f"{base + off:016x}  {hexpart:<47}  |{text}|{flag}")
    return "\n".join(out)
