"""Which BPF features of the running kernel the trace sources may use, as ``-D`` constants.

``TRACE_HAVE_TASK_STORAGE``: ``BPF_MAP_TYPE_TASK_STORAGE`` with
``bpf_task_storage_get`` and ``bpf_get_current_task_btf`` callable from tracepoint
programs. Task storage came with Linux 5.11 for LSM programs; the kernel patch "bpf:
Enable task local storage for tracing programs" opened it to every tracing program type
(tracepoints and raw tracepoints too) soon after, so 5.13 is taken as a safe lower
bound; it needs the kernel's BTF (``/sys/kernel/btf/vmlinux``) for the task pointer.
``bpf_task_storage_get`` may return NULL (no memory, or the storage busy with another
BPF program on the CPU): the sources then treat the call as not remembered (counted
as a drop for an open, as a full hash map is). The sources that need it
(:attr:`ringtool.kernel.needs.KernelNeeds.task_storage`) keep their per-thread state
there when this is 1 and in hash maps keyed by tid when it is 0.

``TRACE_HAVE_TASK_BTF`` and the offsets of the fields the sources read straight from
the current task (bpf/trace_event.h), from the running kernel's BTF
(:mod:`ringtool.kernel.btf`), on kernels with ``bpf_get_current_task_btf`` (the task
storage bound above covers it): ``TRACE_TASK_COMM_OFF`` (``task_struct.comm``),
``TRACE_TASK_CRED_OFF`` with ``TRACE_CRED_UID_OFF``/``TRACE_CRED_GID_OFF`` (the real
uid and gid, as ``bpf_get_current_uid_gid``), and ``TRACE_TASK_CGROUPS_OFF`` with
``TRACE_CSS_SET_DFL_CGRP_OFF``, ``TRACE_CGROUP_KN_OFF``, ``TRACE_KERNFS_NODE_ID_OFF``
(the cgroup v2 id, as ``bpf_get_current_cgroup_id``: task -> css_set -> default
cgroup -> its kernfs node's id), and ``TRACE_TASK_PID_OFF`` with
``TRACE_TASK_TGID_OFF`` (``task_struct.pid``/``tgid``, what
``bpf_get_current_pid_tgid`` returns), and ``TRACE_TASK_START_TIME_OFF``
(``task_struct.start_time``: with the task's address, which task a per-thread slot
keyed by tid belongs to, for the source that keeps such slots). Each group is given
whole or not at all; the sources
call the helper for a group that is absent, and for all of them on kernels before
6.1 (``TASK_FIELDS_SINCE``).

The offsets of other kernel structs' members a program reads by address
(:class:`ringtool.kernel.needs.BtfMember`: the tcp source's ``tcp_sock.bytes_acked``,
read from a socket with ``bpf_probe_read_kernel``), each given where the kernel's BTF
shows it (:func:`member_defines`); a program decides what it does without one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from ringtool.kernel.btf import VMLINUX_BTF, char_array_offset, field_offsets
from ringtool.kernel.needs import BtfMember, KernelNeeds

#: The first kernel (major, minor) whose tracepoint programs may call bpf_task_storage_get.
TASK_STORAGE_SINCE = (5, 13)
#: The first kernel the direct task-field reads are given on: the oldest one CI runs
#: them on (Debian 12's 6.1); older kernels with BTF get the helpers, so a verifier
#: that judged those loads differently there cannot keep the sources from loading.
TASK_FIELDS_SINCE = (6, 1)
#: The kernel's TASK_COMM_LEN (include/linux/sched.h), the length of TRACE_COMM_LEN.
TASK_COMM_LEN = 16
#: Groups of -D names, each the offsets of one chain of members (every member but the
#: last a pointer to the next struct) and the last member's size.
FIELD_CHAINS: tuple[tuple[tuple[str, ...], tuple[str, ...], int], ...] = (
    (("TRACE_TASK_CRED_OFF", "TRACE_CRED_UID_OFF"), ("task_struct.cred", "cred.uid"), 4),
    (("TRACE_TASK_CRED_OFF", "TRACE_CRED_GID_OFF"), ("task_struct.cred", "cred.gid"), 4),
    (
        ("TRACE_TASK_CGROUPS_OFF", "TRACE_CSS_SET_DFL_CGRP_OFF", "TRACE_CGROUP_KN_OFF",
         "TRACE_KERNFS_NODE_ID_OFF"),
        ("task_struct.cgroups", "css_set.dfl_cgrp", "cgroup.kn", "kernfs_node.id"),
        8,
    ),
    (("TRACE_TASK_PID_OFF",), ("task_struct.pid",), 4),
    (("TRACE_TASK_TGID_OFF",), ("task_struct.tgid",), 4),
    (("TRACE_TASK_START_TIME_OFF",), ("task_struct.start_time",), 8),
)  # fmt: skip
#: Which chains belong together (the uid and the gid, the pid and the tgid: both or
#: neither).
FIELD_GROUPS = ((0, 1), (2,), (3, 4), (5,))


def kernel_version(release: str) -> tuple[int, int]:
    """(major, minor) of a ``uname -r`` string such as ``6.1.0-18-amd64``; (0, 0)
    when it does not start with two numbers."""
    m = re.match(r"(\d+)\.(\d+)", release)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def has_task_storage(release: str | None = None, btf: Path = VMLINUX_BTF) -> bool:
    """Whether tracepoint programs can use task storage on this kernel (``release``:
    ``os.uname().release`` unless given)."""
    rel = os.uname().release if release is None else release
    return kernel_version(rel) >= TASK_STORAGE_SINCE and btf.exists()


def comm_offset(btf: Path = VMLINUX_BTF) -> int | None:
    """The byte offset of ``task_struct.comm`` for direct loads through
    ``bpf_get_current_task_btf()``, or None when the kernel lacks that helper (the
    task storage bound) or its BTF does not show a ``char comm[16]``."""
    if not has_task_storage(btf=btf):
        return None
    return char_array_offset("task_struct", "comm", TASK_COMM_LEN, btf)


def task_field_defines(
    btf: Path = VMLINUX_BTF, release: str | None = None, members: Iterable[str] | None = None
) -> dict[str, int | str]:
    """``TRACE_HAVE_TASK_BTF`` and the offsets of the task fields the sources read
    directly (see the module doc); {} where the kernel lacks the helper, and below
    :data:`TASK_FIELDS_SINCE` (``release``: ``os.uname().release`` unless given).
    ``members``: the ``task_struct`` members wanted (``task_struct.comm``, and the first
    member of each chain of :data:`FIELD_CHAINS`); None: all; empty: {}."""
    wanted = None if members is None else set(members)
    rel = os.uname().release if release is None else release
    if wanted == set() or kernel_version(rel) < TASK_FIELDS_SINCE or not has_task_storage(rel, btf):
        return {}
    out: dict[str, int | str] = {"TRACE_HAVE_TASK_BTF": 1}
    comm = comm_offset(btf) if wanted is None or "task_struct.comm" in wanted else None
    if comm is not None:
        out["TRACE_TASK_COMM_OFF"] = comm
    for group in FIELD_GROUPS:
        if wanted is not None and not all(FIELD_CHAINS[i][1][0] in wanted for i in group):
            continue
        found: dict[str, int | str] = {}
        for index in group:
            names, steps, size = FIELD_CHAINS[index]
            offsets = field_offsets(list(steps), size, btf)
            if offsets is None:
                break
            found.update(zip(names, offsets, strict=True))
        else:
            out.update(found)
    return out


def member_defines(members: Iterable[BtfMember], btf: Path = VMLINUX_BTF) -> dict[str, int | str]:
    """Each of ``members`` whose offset the kernel's BTF shows: its ``define`` -> the
    offset (see the module doc); {} without BTF."""
    out: dict[str, int | str] = {}
    for m in members:
        found = field_offsets([m.member], m.size, btf)
        if found is not None:
            out[m.define] = found[0]
    return out


def feature_defines(needs: KernelNeeds) -> dict[str, int | str]:
    """For the running kernel and a program's ``needs``: ``TRACE_HAVE_TASK_STORAGE`` ->
    1 or 0 (when it keeps per-thread state), :func:`task_field_defines` of its task
    members (tracing programs: bpf_get_current_task_btf is not callable from the
    networking program types, whose needs name no member) and :func:`member_defines`
    of its other members."""
    out: dict[str, int | str] = member_defines(needs.members)
    if needs.task_storage:
        out["TRACE_HAVE_TASK_STORAGE"] = int(has_task_storage())
    if needs.task_members:
        out.update(task_field_defines(members=needs.task_members))
    return out


__all__ = ["TASK_FIELDS_SINCE", "TASK_STORAGE_SINCE",
           "comm_offset", "feature_defines", "has_task_storage", "kernel_version",
           "member_defines",
           "task_field_defines"]  # fmt: skip
