"""Compile and load the programs in ``bpf/`` with BCC.

Constants reach the C code as ``-D`` cflags, never by editing the source text.
Errors say what is missing and how to fix it.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ringtool.bpf_files import bpf_dir, bpf_file
from ringtool.errors import KernelFeatureError, RingtoolError
from ringtool.kernel import perf_event
from ringtool.kernel.needs import NO_NEEDS, KernelNeeds
from ringtool.programs.cached import CachedProgram
from ringtool.programs.kernel_features import feature_defines
from ringtool.programs.loaded import LoadedProgram
from ringtool.programs.tp_presence import presence_defines
from ringtool.programs.tracepoints import layout_choices, layout_defines

BPF_DIR = bpf_dir()


class BpfCompileError(RingtoolError):
    """BCC could not compile or load a program (the message has clang's / the
    verifier's reason)."""


def import_bcc() -> Any:
    """The ``bcc`` module, or a KernelFeatureError saying how to get it."""
    try:
        import bcc
    except ImportError as exc:
        raise KernelFeatureError(
            f"BCC is not importable ({exc}): install python3-bpfcc and use a venv made "
            "from /usr/bin/python3 with --system-site-packages (`make setup` does both)"
        ) from exc
    return bcc


def cflags_for(defines: Mapping[str, int | str] | None = None) -> list[str]:
    """clang flags for a ``bpf/`` file: its include directory, ``defines`` as ``-D``,
    and ``-w``: clang's warnings are about the kernel's own headers when the kernel is
    newer than the clang BCC uses (Linux 6.12's give a dozen lines per source with
    Debian 12's clang 14), printed to the user's terminal and not theirs to act on;
    errors still print, and fail the compile (BpfCompileError)."""
    flags = [f"-I{BPF_DIR}", "-w"]
    for key, value in (defines or {}).items():
        flags.append(f"-D{key}={value}")
    return flags


def compile_program(
    filename: str,
    *,
    defines: Mapping[str, int | str] | None = None,
    attach: bool = True,
    needs: KernelNeeds = NO_NEEDS,
) -> Any:
    """Compile ``bpf/<filename>`` with BCC; returns the ``bcc.BPF`` object (its maps
    are ``obj["name"]``; programs are loaded with ``obj.load_func``).

    BCC attaches the programs named ``tracepoint__*`` (``TRACEPOINT_PROBE``),
    ``kprobe__*``, ... as it compiles them. ``attach=False`` loads the tracepoint
    programs (the verifier runs now: a refusal is a BpfCompileError here) but attaches
    nothing until :func:`attach_programs`, so a reader can be ready first.

    What the program ``needs`` from the kernel (the caller's plain data) becomes ``-D``
    constants for the running kernel: the tracepoint field layouts, read from tracefs
    (:func:`ringtool.programs.tracepoints.layout_choices`; a
    :class:`~ringtool.programs.tracepoints.TracepointFormatError` when they can't be);
    which optional tracepoints exist
    (:func:`ringtool.programs.tp_presence.presence_defines`); and which BPF features
    it has (:func:`ringtool.programs.kernel_features.feature_defines`);
    an entry of ``defines`` with the same name overrides the kernel's choice."""
    bcc = import_bcc()
    path = bpf_file(filename)
    try:
        obj = (bcc.BPF if attach else _deferred_class())(
            src_file=str(path).encode(),
            cflags=cflags_for(program_defines(filename, needs) | dict(defines or {})),
        )
        if not attach:
            for i in range(bcc.lib.bpf_num_functions(obj.module)):
                name = bcc.lib.bpf_function_name(obj.module, i)
                if name.startswith(b"tracepoint__"):
                    obj.load_func(name, bcc.BPF.TRACEPOINT)  # cached for the attach
                elif name.startswith(b"raw_tracepoint__"):
                    obj.load_func(name, bcc.BPF.RAW_TRACEPOINT)
        return obj
    except Exception as exc:  # BCC raises bare Exception
        raise BpfCompileError(
            f"BCC could not compile {filename}: {exc}; run `ringtool doctor` to check "
            "kernel headers and BPF support"
        ) from exc


def program_defines(filename: str, needs: KernelNeeds = NO_NEEDS) -> dict[str, int | str]:
    """The ``-D`` constants :func:`compile_program` adds for what ``bpf/<filename>``
    ``needs`` from the running kernel (see there)."""
    return (layout_defines(layout_choices(needs.string_fields, filename))
            | presence_defines(needs.optional) | feature_defines(needs))  # fmt: skip


@functools.cache
def _deferred_class() -> Any:
    bcc = import_bcc()

    class DeferredBPF(bcc.BPF):  # type: ignore[misc, name-defined]
        """A ``bcc.BPF`` whose constructor attaches nothing (see compile_program)."""

        attach_now = False

        def _trace_autoload(self) -> None:
            if self.attach_now:
                super()._trace_autoload()

    return DeferredBPF


def attach_programs(obj: LoadedProgram) -> None:
    """Attach the programs of an ``attach=False`` :func:`compile_program` object the
    way BCC would have (its autoload: ``tracepoint__cat__event`` to ``cat:event``, ...);
    a BpfCompileError when the kernel refuses one. A program from the program cache
    (:class:`~ringtool.programs.cached.CachedProgram`) attaches itself the same way."""
    if isinstance(obj, CachedProgram):
        try:
            obj.attach()
        except (RingtoolError, OSError) as exc:
            raise BpfCompileError(f"could not attach the programs: {exc}") from exc
        return
    bcc_obj: Any = obj  # a DeferredBPF of compile_program(attach=False)
    if not getattr(bcc_obj, "attach_now", True):
        bcc_obj.attach_now = True
        try:
            bcc_obj._trace_autoload()
        except Exception as exc:  # BCC raises bare Exception
            raise BpfCompileError(f"could not attach the programs: {exc}") from exc


def load_function(obj: Any, name: str, prog_type: str) -> Any:
    """``obj.load_func(name, BPF.<prog_type>)`` with a clear error on refusal."""
    bcc = import_bcc()
    try:
        return obj.load_func(name.encode(), getattr(bcc.BPF, prog_type))
    except Exception as exc:  # BCC raises bare Exception with the verifier log printed
        raise BpfCompileError(f"the kernel refused program {name} ({prog_type}): {exc}") from exc


def detach_points(objs: Sequence[LoadedProgram]) -> None:
    """Detach the programs of BCC objects from what they are attached to (raw
    tracepoints first, then tracepoints, concurrently) and keep the rest: the programs
    stay loaded, their fds and maps open, until :func:`detach_all`.

    Closing a tracepoint's perf event waits in the kernel for RCU grace periods
    (perf_trace_event_unreg -> tracepoint_synchronize_unregister): ~70 ms each here,
    and BCC closes them one after another. Each event is disabled and closed (what
    libbcc's ``bpf_close_perf_event_fd`` does) from a thread of its own -- the close
    releases the GIL -- so the waits overlap. Works on BCC objects and on
    :class:`~ringtool.programs.cached.CachedProgram` alike. Best effort: an attachment
    that fails does not stop the others; a RingtoolError naming them is raised at the
    end."""
    failed: list[str] = []

    def close(tp: bytes, fd: int) -> None:
        try:
            perf_event.disable(fd)
        except RingtoolError:
            pass  # closed below all the same
        try:
            os.close(fd)
        except OSError:
            failed.append(tp.decode(errors="replace"))

    for obj in objs:
        for tp, fd in list(obj.raw_tracepoint_fds.items()):
            try:
                os.close(fd)
            except OSError:
                failed.append(tp.decode(errors="replace"))
            del obj.raw_tracepoint_fds[tp]
    events = [(tp, fd) for obj in objs for tp, fd in obj.tracepoint_fds.items()]
    threads = [threading.Thread(target=close, args=event) for event in events]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for obj in objs:
        obj.tracepoint_fds.clear()  # closed above
    if failed:
        raise RingtoolError(f"could not detach tracepoints {', '.join(failed)}")


def detach_all(objs: Sequence[LoadedProgram]) -> None:
    """Detach and free loaded programs (BCC objects, cached programs):
    :func:`detach_points` (the tracepoints closed concurrently), then ``cleanup()`` of
    each, which finds no tracepoint left and frees the rest. Best effort: an object
    that fails does not stop the others; the first error is raised at the end.
    """
    if not objs:
        return
    first: BaseException | None = None
    try:
        detach_points(objs)
    except RingtoolError as exc:
        first = exc
    for obj in objs:
        try:
            obj.cleanup()
        except Exception as exc:  # BCC raises bare Exception
            first = first or exc
    if first is not None:
        raise first
