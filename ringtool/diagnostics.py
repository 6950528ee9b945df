"""What ``ringtool doctor`` checks: each check says pass/fail, what it saw, and the fix.

Each check is a small function returning a :class:`Check` (or one per item it
checked, e.g. per tracepoint layout choice); none raises. Required checks decide the
exit status; advisory ones only inform.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MIN_KERNEL = (5, 8)  # BPF_MAP_TYPE_RINGBUF


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True


def _kernel_version() -> Check:
    rel = platform.release()
    try:
        major, minor = (int(x) for x in rel.split(".")[:2])
    except ValueError:
        return Check("kernel version", False, f"cannot parse {rel!r}", "run Linux >= 5.8")
    ok = (major, minor) >= MIN_KERNEL
    return Check(
        "kernel version",
        ok,
        f"{rel} (RINGBUF needs >= 5.8)",
        "" if ok else "boot a kernel >= 5.8 (Debian 12's 6.1 works)",
    )


def _btf() -> Check:
    path = Path("/sys/kernel/btf/vmlinux")
    ok = path.exists()
    return Check(
        "kernel BTF",
        ok,
        str(path) + (" present" if ok else " missing"),
        "" if ok else "use a kernel built with CONFIG_DEBUG_INFO_BTF=y",
        required=False,
    )


def _privileges() -> Check:
    from ringtool.kernel.privileges import has_bpf_privileges

    ok = has_bpf_privileges()
    who = "root" if os.geteuid() == 0 else f"uid {os.geteuid()}"
    return Check(
        "privileges",
        ok,
        f"{who}" + (", may load BPF" if ok else ", no CAP_BPF+CAP_PERFMON"),
        "" if ok else "run with sudo (or grant CAP_BPF+CAP_PERFMON)",
    )


def _bpf_maps() -> Check:
    from ringtool.kernel import bpf

    made = []
    try:
        for kind, key, value, entries in (
            (bpf.MapType.RINGBUF, 0, 0, 4096),
            (bpf.MapType.PERF_EVENT_ARRAY, 4, 4, 1),
        ):
            fd = bpf.map_create(kind, key_size=key, value_size=value, max_entries=entries)
            os.close(fd)
            made.append(kind.name)
    except Exception as exc:
        return Check(
            "bpf() maps",
            False,
            f"creating a {'PERF_EVENT_ARRAY' if made else 'RINGBUF'} map failed: {exc}",
            "run as root; check kernel.unprivileged_bpf_disabled and CONFIG_BPF_SYSCALL",
        )
    return Check("bpf() maps", True, "created a RINGBUF and a PERF_EVENT_ARRAY map")


def _ringbuf_overwrite() -> Check:
    """Which ring a flight recorder (newest events kept in the kernel) gets here."""
    from ringtool.kernel.ringbuf_map import has_ringbuf_overwrite

    if has_ringbuf_overwrite():
        detail = "BPF_F_RB_OVERWRITE: flight recording uses an overwrite RINGBUF"
    else:
        detail = (
            "no BPF_F_RB_OVERWRITE (Linux 6.19+): flight recording uses the perf "
            "overwrite ring (PerfBuffer(overwrite=True), write_backward)"
        )
    return Check("ringbuf overwrite", True, detail, required=False)


def _markers() -> Check:
    """Whether `ringtool mark` can reach a trace here: USER_RINGBUF, clang, bpftool."""
    from ringtool.kernel.ringbuf_map import has_user_ringbuf
    from ringtool.programs.clang_loader import missing_tools

    if not has_user_ringbuf():
        return Check("markers", False, "no BPF_MAP_TYPE_USER_RINGBUF (Linux 6.1+): "
                     "traces run without `ringtool mark`", "run Linux >= 6.1",
                     required=False)  # fmt: skip
    missing = missing_tools()
    if missing:
        return Check("markers", False, f"{' and '.join(missing)} not installed: traces run "
                     "without `ringtool mark`", "make setup (Debian: clang-14, bpftool)",
                     required=False)  # fmt: skip
    return Check("markers", True, "USER_RINGBUF, clang and bpftool: `ringtool mark` works",
                 required=False)  # fmt: skip


def _perf_event() -> Check:
    from ringtool.kernel import perf_event

    try:
        fd = perf_event.perf_event_open(perf_event.bpf_output_attr(), pid=-1, cpu=0)
        os.close(fd)
    except Exception as exc:
        return Check(
            "perf_event_open",
            False,
            f"PERF_COUNT_SW_BPF_OUTPUT refused: {exc}",
            "run as root, or lower kernel.perf_event_paranoid / grant CAP_PERFMON",
        )
    return Check("perf_event_open", True, "PERF_COUNT_SW_BPF_OUTPUT on CPU 0")


def _mounted(fstype: str) -> list[str]:
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    return [ln.split()[1] for ln in lines if len(ln.split()) > 2 and ln.split()[2] == fstype]


def _readable_dir(path: str) -> bool:
    try:
        return Path(path).is_dir() and os.access(path, os.R_OK | os.X_OK)
    except OSError:
        return False


def _tracefs() -> Check:
    points = _mounted("tracefs")
    ok = bool(points) and _readable_dir("/sys/kernel/tracing/events/sched")
    if points and not ok and os.geteuid() != 0:
        return Check("tracefs", False, f"{points[0]} not readable", "run with sudo")
    return Check(
        "tracefs",
        ok,
        ", ".join(points) or "not mounted",
        "" if ok else "mount -t tracefs tracefs /sys/kernel/tracing (make setup does it)",
    )


def _bpffs() -> Check:
    points = _mounted("bpf")
    ok = bool(points)
    return Check(
        "bpffs",
        ok,
        ", ".join(points) or "not mounted",
        "" if ok else "mount -t bpf bpf /sys/fs/bpf (make setup does it)",
        required=False,
    )


def _bpffs_access() -> Check:
    """Whether another user could plant ringtool's pin root: a bpffs any user may write
    (mode 1777, the kernel's default without ``-o mode=``), or a pin root already there
    that ringtool would refuse (ringtool/kernel/pin_root.py)."""
    from ringtool.errors import UnsafeDirectoryError
    from ringtool.kernel.pin_root import PIN_ROOT, open_pin_root

    bpffs = os.path.dirname(PIN_ROOT)
    try:
        fd = open_pin_root(PIN_ROOT, create=False)
    except UnsafeDirectoryError as exc:
        return Check("bpffs access", False, str(exc), required=False)  # names the fix
    except OSError as exc:
        return Check("bpffs access", False, f"{PIN_ROOT}: {exc.strerror}", required=False)
    if fd is not None:
        os.close(fd)
    try:
        mode = os.stat(bpffs).st_mode
    except OSError:
        return Check("bpffs access", False, f"{bpffs} missing", required=False)
    if mode & 0o002:
        return Check("bpffs access", False, f"{bpffs} is mode {mode & 0o7777:04o}: any user may "
                     f"create entries there, {PIN_ROOT} too (ringtool refuses one it did not "
                     "make: markers off)",
                     f"chmod 1700 {bpffs}; mount bpffs with -o mode=700 (make setup does)",
                     required=False)  # fmt: skip
    return Check("bpffs access", True, f"{bpffs} is mode {mode & 0o7777:04o}", required=False)


def _headers() -> Check:
    krel = platform.release()
    build = Path(f"/lib/modules/{krel}/build")
    if not (build / "include").exists():
        return Check(
            "kernel headers",
            False,
            f"{build} missing",
            "run `make setup` (installs linux-headers-amd64 and links it)",
        )
    target = build.resolve()
    marker = build.parent / ".ringtool-linked-headers"
    if marker.exists() or krel not in target.name:
        return Check(
            "kernel headers",
            True,
            f"linked fallback {target} for {krel} (no exact package for this kernel)",
        )
    return Check("kernel headers", True, f"exact: {target}")


def _bpf_sources() -> Check:
    from ringtool.bpf_files import MARKER, BpfSourcesMissing, candidates, require_bpf_dir

    try:
        place = require_bpf_dir()
    except BpfSourcesMissing:
        looked = ", ".join(str(p) for p in candidates()) or "no directory on disk"
        return Check(
            "BPF sources",
            False,
            f"{MARKER} and the programs not found in {looked}",
            "reinstall ringtool: `pip install .` (or `make setup`) in a checkout with bpf/",
        )
    count = len(list(place.glob("*.c")))
    return Check("BPF sources", True, f"{place} ({count} programs)")


_TRIVIAL = b"""
BPF_RINGBUF_OUTPUT(doctor_rb, 1);
int doctor_prog(struct __sk_buff *skb) {
    u64 v = skb->len;
    doctor_rb.ringbuf_output(&v, sizeof(v), 0);
    return 0;
}
"""


def _bcc() -> Check:
    try:
        import bcc
    except ImportError as exc:
        return Check(
            "BCC",
            False,
            f"not importable: {exc}",
            "apt-get install python3-bpfcc; use .venv made by `make setup`",
        )
    try:
        obj = bcc.BPF(text=_TRIVIAL)
        obj.load_func(b"doctor_prog", bcc.BPF.SCHED_CLS)
        obj.cleanup()
    except Exception as exc:
        return Check(
            "BCC",
            False,
            f"imports, but compiling a trivial program failed: {exc}",
            "check the kernel headers line above; run `make setup`",
        )
    version = getattr(bcc, "__version__", "?")
    return Check("BCC", True, f"bcc {version} compiled and loaded a ringbuf program")


def _kprobes() -> Check:
    try:
        ok = Path("/sys/kernel/tracing/kprobe_events").exists()
    except OSError:
        ok = False
    return Check(
        "kprobes",
        ok,
        "available" if ok else "not configured (tracepoints are used instead)",
        required=False,
    )


def _tracepoint_layouts() -> list[Check]:
    """One line per tracepoint field whose layout ringtool picks for this kernel, and
    one saying which optional tracepoints it has (the syscalls traced where they exist)."""
    from ringtool.event.registry import NEEDS  # what every event type needs
    from ringtool.programs.tp_presence import presence_defines
    from ringtool.programs.tracepoints import TracepointFormatError, layout_choices

    try:
        choices = layout_choices(NEEDS.string_fields, "ringtool trace")
    except TracepointFormatError as exc:
        return [Check("tracepoint layout", False, str(exc), "check the tracefs line above")]
    have = presence_defines(NEEDS.optional)
    missing = [k for k, v in have.items() if not v]
    detail = ", ".join(f"-D{k}={v}" for k, v in have.items())
    if missing:
        detail += " (not traced on this kernel: " + ", ".join(missing) + ")"
    return [Check("tracepoint layout", True, c.describe()) for c in choices] + [
        Check("optional tracepoints", True, detail, required=False)
    ]


def _btf_members() -> Check:
    """Where the running kernel's BTF puts the struct members the sources read by
    address (the tcp source's socket counters); a missing one disables its source."""
    from ringtool.event.registry import NEEDS
    from ringtool.programs.kernel_features import member_defines

    found = member_defines(NEEDS.members)
    missing = [m.member for m in NEEDS.members if m.define not in found]
    shown = ", ".join(f"{m.member} at {found[m.define]}" for m in NEEDS.members
                      if m.define in found)  # fmt: skip
    if missing:
        return Check("BTF members", False, "not in the kernel's BTF: " + ", ".join(missing),
                     "the tcp source needs /sys/kernel/btf/vmlinux (CONFIG_DEBUG_INFO_BTF)",
                     required=False)  # fmt: skip
    return Check("BTF members", True, shown, required=False)


#: Every check with the labels of the lines it gives (label, required) and whether it
#: needs BPF privileges. A run without them gives the same labels: each check it could
#: not do is one line per label saying so and why (``doctor`` as a user and as root
#: list the same checks under the same names).
CHECKS: tuple[tuple[Callable[[], Check | list[Check]], tuple[tuple[str, bool], ...], bool], ...] = (
    (_kernel_version, (("kernel version", True),), False),
    (_privileges, (("privileges", True),), False),
    (_btf, (("kernel BTF", False),), False),
    (_bpf_maps, (("bpf() maps", True),), True),
    (_perf_event, (("perf_event_open", True),), True),
    (_ringbuf_overwrite, (("ringbuf overwrite", False),), True),
    (_markers, (("markers", False),), True),
    (_tracefs, (("tracefs", True),), False),
    (_bpffs, (("bpffs", False),), False),
    (_bpffs_access, (("bpffs access", False),), True),
    (_headers, (("kernel headers", True),), False),
    (_bpf_sources, (("BPF sources", True),), False),
    (_tracepoint_layouts, (("tracepoint layout", True), ("optional tracepoints", False)), True),
    (_btf_members, (("BTF members", False),), False),
    (_bcc, (("BCC", True),), True),
    (_kprobes, (("kprobes", False),), False),
)  # fmt: skip


def run_checks() -> list[Check]:
    """Run every check; never raises. Without privileges the checks that need them are
    not attempted: each of their labels is a failed line saying so and why, with the
    fix (the same labels as a privileged run)."""
    from ringtool.kernel.privileges import has_bpf_privileges

    privileged = has_bpf_privileges()
    why = f"not tried: needs root or CAP_BPF+CAP_PERFMON (this is uid {os.geteuid()})"
    out = []
    for check, labels, needs_privilege in CHECKS:
        if needs_privilege and not privileged:
            out += [Check(name, False, why, "run with sudo", req) for name, req in labels]
            continue
        try:
            result = check()
            out.extend(result if isinstance(result, list) else [result])
        except Exception as exc:
            name, required = labels[0]
            out.append(Check(name, False, f"check crashed: {exc}", required=required))
    return out
