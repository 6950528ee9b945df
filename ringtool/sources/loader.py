"""Compile and load the programs in ``bpf/`` with BCC.

Constants reach the C code as ``-D`` cflags, never by editing the source text.
Errors say what is missing and how to fix it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ringtool.errors import KernelFeatureError, RingtoolError
from ringtool.sources.tracepoints import layout_choices, layout_defines

BPF_DIR = Path(__file__).resolve().parents[2] / "bpf"


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
    flags = [f"-I{BPF_DIR}"]
    for key, value in (defines or {}).items():
        flags.append(f"-D{key}={value}")
    return flags


def compile_program(filename: str, *, defines: Mapping[str, int | str] | None = None) -> Any:
    """Compile ``bpf/<filename>`` with BCC; returns the ``bcc.BPF`` object (its maps
    are ``obj["name"]``; programs are loaded with ``obj.load_func``).

    The tracepoint field layouts the file depends on are read from the running
    kernel's tracefs and added as ``-D`` constants
    (:func:`ringtool.sources.tracepoints.layout_choices`; a
    :class:`~ringtool.sources.tracepoints.TracepointFormatError` when they can't be);
    an entry of ``defines`` with the same name overrides the kernel's choice."""
    bcc = import_bcc()
    path = BPF_DIR / filename
    if not path.is_file():
        raise BpfCompileError(f"no BPF source {path}")
    tp_defines = layout_defines(layout_choices(filename))
    try:
        return bcc.BPF(
            src_file=str(path).encode(), cflags=cflags_for(tp_defines | dict(defines or {}))
        )
    except Exception as exc:  # BCC raises bare Exception
        raise BpfCompileError(
            f"BCC could not compile {filename}: {exc}; run `ringtool doctor` to check "
            "kernel headers and BPF support"
        ) from exc


def load_function(obj: Any, name: str, prog_type: str) -> Any:
    """``obj.load_func(name, BPF.<prog_type>)`` with a clear error on refusal."""
    bcc = import_bcc()
    try:
        return obj.load_func(name.encode(), getattr(bcc.BPF, prog_type))
    except Exception as exc:  # BCC raises bare Exception with the verifier log printed
        raise BpfCompileError(f"the kernel refused program {name} ({prog_type}): {exc}") from exc
