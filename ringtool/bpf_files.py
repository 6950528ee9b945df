"""Where the BPF C sources and headers are at run time.

The repository keeps them in its top-level ``bpf/``. An installed ringtool (a wheel,
``pip install .``, ``pipx install``) carries them as package data: pyproject.toml maps
the package ``ringtool.bpf`` to that directory, so they are installed as
``ringtool/bpf/*.c``/``*.h``, found here beside the package's ``__init__.py``.
A source checkout run in place (``PYTHONPATH=.``, or the editable install
``scripts/setup.sh`` makes, which puts the checkout itself on ``sys.path``) has no
``ringtool/bpf/``: there they are the checkout's ``bpf/``, beside the ``ringtool``
package and its ``pyproject.toml``.

BCC compiles from real files (``src_file=``, ``-I``), so only a directory on the file
system counts; a ringtool imported from a zip has none (:class:`BpfSourcesMissing`).
``package`` (default ``ringtool``) is which package's data to look in.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from ringtool.errors import RingtoolError

#: The package whose data directory :data:`SUBDIR` holds the sources once installed.
PACKAGE = "ringtool"
SUBDIR = "bpf"
#: A file every source directory has (the trace event layout); its presence decides.
MARKER = "trace_event.h"


class BpfSourcesMissing(RingtoolError):
    """Neither the installed package data nor a source checkout has the BPF sources."""


def candidates(package: str = PACKAGE) -> tuple[Path, ...]:
    """The directories looked in, in order: the package data, then the checkout's
    ``bpf/`` (only when the package sits in a checkout: ``pyproject.toml`` beside it).
    Empty when the package is not imported from the file system."""
    # the package's own directory (not importlib.resources.files: its import costs
    # start-up milliseconds); a package in a zip or without __file__ has none
    file = getattr(importlib.import_module(package), "__file__", None)
    root = Path(file).parent if file else None
    if root is None or not root.is_dir():
        return ()
    found = [root / SUBDIR]
    if (root.parent / "pyproject.toml").is_file():
        found.append(root.parent / SUBDIR)
    return tuple(found)


def bpf_dir(package: str = PACKAGE) -> Path:
    """The directory with the BPF sources: the first of :func:`candidates` holding
    :data:`MARKER`. Never raises: when none does it returns where the package data
    belongs, so that opening a file there names the place (see :func:`require_bpf_dir`
    for the error that says what to do)."""
    places = candidates(package)
    for place in places:
        if (place / MARKER).is_file():
            return place
    return places[0] if places else Path(package) / SUBDIR


def require_bpf_dir(package: str = PACKAGE) -> Path:
    """:func:`bpf_dir`, or BpfSourcesMissing naming the places looked in and the fix."""
    place = bpf_dir(package)
    if (place / MARKER).is_file():
        return place
    looked = ", ".join(str(p) for p in candidates(package)) or "nowhere (not on a file system)"
    raise BpfSourcesMissing(
        f"the BPF sources ({MARKER} and the bpf/*.c programs) are missing: looked in "
        f"{looked}; reinstall ringtool from a wheel or checkout that has them (`pip install .`)"
    )


def bpf_file(name: str, package: str = PACKAGE) -> Path:
    """``name`` (e.g. ``trace_open.c``) in :func:`bpf_dir`; BpfSourcesMissing when
    the directory or the file is not there."""
    path = require_bpf_dir(package) / name
    if not path.is_file():
        raise BpfSourcesMissing(f"no BPF source {path}: reinstall ringtool (`pip install .`)")
    return path


__all__ = ["BpfSourcesMissing", "bpf_dir", "bpf_file", "candidates", "require_bpf_dir"]
