"""A compiled ``bpf/`` file loaded from a program cache entry, without BCC, and the
entry taken from a BCC object in the first place.

:func:`capture` reads a freshly compiled BCC object (its tables, its loaded
functions' instructions, the tables' BTF from the kernel) into an
:class:`~ringtool.programs.cache_entry.Entry`; :class:`CachedProgram` does what BCC did
with it: loads the BTF, creates the tables, patches the map fds into the instructions
(:mod:`ringtool.programs.relocs`), loads the programs (byte-identical ones once, their
fd shared), and attaches them the way BCC's
autoload would (``tracepoint__cat__event`` to ``cat:event``, ``raw_tracepoint__name``
to ``name``). It offers what ringtool uses of a BCC object
(:class:`ringtool.programs.loaded.LoadedProgram`): tables as ``obj[b"name"]``
(:class:`~ringtool.programs.table_view.MapTable`), ``funcs``, the attachment fds and
``cleanup()``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from typing import Any, NamedTuple

from ringtool.errors import RingtoolError
from ringtool.kernel import bpf
from ringtool.kernel.bcc_module import function_insns, module_tables
from ringtool.kernel.bpf_load import (
    MapSpec,
    btf_blob,
    btf_load,
    map_create_spec,
    prog_load,
    raw_tracepoint_open,
    tracepoint_attach,
)
from ringtool.programs.cache_entry import Entry, FuncEntry, TableEntry
from ringtool.programs.relocs import NotCacheable, find_relocs, patch
from ringtool.programs.table_view import MapTable

PROG_TRACEPOINT = 5
PROG_RAW_TRACEPOINT = 17
#: Threads loading a cached file's programs at most (at most one per CPU it may run on).
MAX_LOADERS = 4
_TYPES = {"tracepoint__": PROG_TRACEPOINT, "raw_tracepoint__": PROG_RAW_TRACEPOINT}


class Function(NamedTuple):
    """A loaded program: BCC's ``BPF.Function`` shape (``name`` in bytes)."""

    name: bytes
    fd: int


def prog_type_of(name: str) -> int | None:
    """The program type BCC loads function ``name`` as (attach=False), or None."""
    return next((t for prefix, t in _TYPES.items() if name.startswith(prefix)), None)


def kernel_name(name: str) -> str:
    """The name BCC gives the kernel for function ``name``: without its
    ``tracepoint__``/``raw_tracepoint__`` prefix (``bpftool prog`` shows the same)."""
    return next((name.removeprefix(p) for p in _TYPES if name.startswith(p)), name)


def capture(obj: Any, lib: Any, source: str, roles: Mapping[str, int]) -> Entry:
    """The cache entry of the BCC object ``obj`` (``lib``: ``bcc.lib``) compiled from
    ``source``, whose functions are loaded; ``roles`` are the ``-D *_FD`` names and the
    fds they had. :class:`NotCacheable` when a function has a reference the cache
    can't move, or a function's type is not a (raw) tracepoint."""
    tables = module_tables(lib, obj.module)
    by_fd = {t.fd: t.name for t in tables}
    role_of = {fd: name for name, fd in roles.items()}
    license = (lib.bpf_module_license(obj.module) or b"GPL").decode()
    funcs = []
    for fn in obj.funcs.values():
        name = fn.name.decode()
        prog_type = prog_type_of(name)
        if prog_type is None:
            raise NotCacheable(f"function {name} is not a tracepoint program")
        insns = function_insns(lib, obj.module, name)
        funcs.append(
            FuncEntry(
                name=name,
                prog_type=prog_type,
                attach_type=0,
                license=license,
                insns=insns,
                relocs=find_relocs(insns, by_fd, role_of),
            )
        )
    btf_ids: list[int] = []
    btfs: list[bytes] = []
    entries = []
    for t in tables:
        info = bpf.map_info(t.fd)
        index = -1
        if info.btf_id:
            if info.btf_id not in btf_ids:
                btf_ids.append(info.btf_id)
                btfs.append(btf_blob(info.btf_id))
            index = btf_ids.index(info.btf_id)
        entries.append(
            TableEntry(
                name=t.name,
                map_type=info.type,
                key_size=info.key_size,
                value_size=info.value_size,
                max_entries=info.max_entries,
                flags=info.flags,
                map_name=info.name,
                btf=index,
                btf_key_type_id=info.btf_key_type_id,
                btf_value_type_id=info.btf_value_type_id,
                key_desc=t.key_desc,
                leaf_desc=t.leaf_desc,
            )
        )
    return Entry(source=source, functions=tuple(funcs), tables=tuple(entries), btfs=tuple(btfs))


class CachedProgram:
    """The programs and tables of ``entry`` loaded into the kernel (nothing attached
    until :meth:`attach`), their role maps being ``roles`` (``-D`` name -> fd, the
    caller's). A kernel refusal is a :class:`ringtool.errors.BpfSyscallError` (for a
    program, :class:`~ringtool.kernel.bpf_load.ProgLoadError` with the verifier's log);
    whatever was made is closed again first."""

    from_cache = True

    def __init__(self, entry: Entry, roles: Mapping[str, int]) -> None:
        self.entry = entry
        self.funcs: dict[bytes, Function] = {}
        self.tracepoint_fds: dict[bytes, int] = {}
        self.raw_tracepoint_fds: dict[bytes, int] = {}
        self._tables: dict[bytes, MapTable] = {}
        self._btf_fds: list[int] = []
        self._attached = False
        try:
            self._load(roles)
        except BaseException:
            self.cleanup()
            raise

    def _load(self, roles: Mapping[str, int]) -> None:
        for blob in self.entry.btfs:
            self._btf_fds.append(btf_load(blob))
        fds: dict[tuple[str, str], int] = {("role", k): v for k, v in roles.items()}
        for t in self.entry.tables:
            spec = MapSpec(
                map_type=t.map_type,
                key_size=t.key_size,
                value_size=t.value_size,
                max_entries=t.max_entries,
                flags=t.flags,
                name=t.map_name,
                btf_key_type_id=t.btf_key_type_id,
                btf_value_type_id=t.btf_value_type_id,
            )
            fd = map_create_spec(spec, self._btf_fds[t.btf] if t.btf >= 0 else 0)
            self._tables[t.name.encode()] = MapTable(
                fd, t.map_type, t.key_size, t.value_size, t.max_entries
            )
            fds[("table", t.name)] = fd
        patched = [(f, patch(f.insns, f.relocs, fds)) for f in self.entry.functions]
        # byte-identical programs (the exits of a syscall family) are verified and
        # loaded once: their one fd is attached to each function's hook alike
        first: dict[tuple[int, bytes, str, int], int] = {}
        same = [first.setdefault((f.prog_type, insns, f.license, f.attach_type), i)
                for i, (f, insns) in enumerate(patched)]  # fmt: skip
        todo = sorted(set(same))
        loaded: list[int | BaseException | None] = [None] * len(patched)

        def load(i: int) -> None:
            f, insns = patched[i]
            try:
                loaded[i] = prog_load(f.prog_type, insns, license=f.license,
                                      name=kernel_name(f.name),
                                      expected_attach_type=f.attach_type)  # fmt: skip
            except BaseException as exc:  # raised below, once every thread is done
                loaded[i] = exc

        def stripe(start: int, step: int) -> None:
            for i in todo[start::step]:
                if any(isinstance(r, BaseException) for r in loaded):
                    return  # one was refused: the entry is not used
                load(i)

        # the verifier runs in the bpf() call, which releases the GIL: the programs are
        # verified on the CPUs this process may use at once (each load is independent)
        workers = min(len(todo), len(os.sched_getaffinity(0)), MAX_LOADERS)
        if workers <= 1:
            stripe(0, 1)
        else:
            threads = [threading.Thread(target=stripe, args=(w, workers)) for w in range(workers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        for (f, _), result in zip(patched, (loaded[i] for i in same), strict=True):
            if isinstance(result, int):  # kept, so that cleanup() closes it on a failure
                self.funcs[f.name.encode()] = Function(f.name.encode(), result)
        failed = next((r for r in loaded if isinstance(r, BaseException)), None)
        if failed is not None:
            raise failed

    def __getitem__(self, name: bytes) -> MapTable:
        try:
            return self._tables[name]
        except KeyError:
            raise KeyError(
                f"no table {name.decode(errors='replace')} in {self.entry.source}"
            ) from None

    def attach(self) -> None:
        """Attach every function as BCC's autoload would (again: nothing more); on a
        refusal what did attach stays recorded for :func:`~ringtool.programs.loader.
        detach_points` and the error is raised."""
        if self._attached:
            return
        self._attached = True
        for name, fn in self.funcs.items():
            text = name.decode()
            if text.startswith("tracepoint__"):
                category, _, event = text.removeprefix("tracepoint__").partition("__")
                self.tracepoint_fds[f"{category}:{event}".encode()] = tracepoint_attach(
                    category, event, fn.fd
                )
            elif text.startswith("raw_tracepoint__"):
                tp = text.removeprefix("raw_tracepoint__")
                self.raw_tracepoint_fds[tp.encode()] = raw_tracepoint_open(tp, fn.fd)

    def cleanup(self) -> None:
        """Close every fd still open: attachments, programs, tables, BTF (idempotent)."""
        fds = dict.fromkeys([  # a program shared by identical functions: closed once
            *self.tracepoint_fds.values(),
            *self.raw_tracepoint_fds.values(),
            *(f.fd for f in self.funcs.values()),
            *(t.map_fd for t in self._tables.values()),
            *self._btf_fds,
        ])  # fmt: skip
        self.tracepoint_fds.clear()
        self.raw_tracepoint_fds.clear()
        self.funcs.clear()
        self._tables.clear()
        self._btf_fds.clear()
        first: OSError | None = None
        for fd in fds:
            try:
                os.close(fd)
            except OSError as exc:
                first = first or exc
        if first is not None:
            raise RingtoolError(f"could not close a cached program's fd: {first}")


__all__ = ["CachedProgram", "Function", "NotCacheable", "capture", "prog_type_of"]
