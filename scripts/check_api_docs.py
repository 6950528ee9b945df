#!/usr/bin/env python3
"""Check that ringtool's public API has the docstrings a generated reference needs.

For each public module (:data:`MODULES`) it takes the public names (``__all__``, or
else the public names the module itself defines), and for each class and function
among them, and each public method, property and class method a ringtool class
defines or inherits from another ringtool class, prints one line when there is no
docstring. It then renders every module with :func:`pydoc.render_doc`, as
``python -m pydoc`` would, and reports a rendering that fails. Exit status 1 when
anything was reported, else 0. Standard library only; run from the checkout root
(``make lint`` does).
"""

from __future__ import annotations

import importlib
import inspect
import pydoc
import sys
from collections.abc import Iterator
from types import ModuleType

#: The modules whose names are ringtool's public API (see docs/library.md).
MODULES = (
    "ringtool",
    "ringtool.errors",
    "ringtool.readers.ringbuf",
    "ringtool.readers.perfbuf",
    "ringtool.readers.ringbuf_group",
    "ringtool.readers.record",
    "ringtool.readers.consumer",
    "ringtool.kmes.reader",
    "ringtool.kmes.writer",
    "ringtool.kmes.attach",
    "ringtool.merge",
    "ringtool.merge.algorithms",
    "ringtool.merge.source",
    "ringtool.merge.window",
)


def public_names(module: ModuleType) -> list[str]:
    """``__all__``, or the public names defined in ``module`` itself."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and getattr(obj, "__module__", None) == module.__name__
    ]


def _ours(cls: type) -> bool:
    return cls.__module__.split(".")[0] == "ringtool"


def members(cls: type) -> Iterator[tuple[str, object]]:
    """The public methods and properties a ringtool class of ``cls``'s MRO defines
    (each name once, as the first such class defines it), by where they are defined."""
    seen: set[str] = set()
    for owner in cls.__mro__:
        if not _ours(owner):
            continue
        for name, raw in vars(owner).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            where = f"{owner.__module__}.{owner.__qualname__}.{name}"
            if isinstance(raw, staticmethod | classmethod):
                yield where, raw.__func__
            elif isinstance(raw, property) or inspect.isfunction(raw):
                yield where, raw


def _has_doc(obj: object) -> bool:
    doc = obj.__doc__ if isinstance(obj, property) else inspect.getdoc(obj)
    return bool(doc and doc.strip())


def missing(module: ModuleType, done: set[str]) -> Iterator[str]:
    """One line per public class, function, method or property without a docstring
    (``done``: the classes and functions already checked, from other modules)."""
    if not (module.__doc__ or "").strip():
        yield f"{module.__name__}: module has no docstring"
    for name in public_names(module):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not _ours_obj(obj):
            continue
        where = f"{obj.__module__}.{obj.__qualname__}"
        if where in done:
            continue
        done.add(where)
        if not (obj.__doc__ or "").strip():
            yield f"{where}: no docstring"
        if inspect.isclass(obj):
            for member, value in members(obj):
                if not _has_doc(value):
                    yield f"{member}: no docstring"


def _ours_obj(obj: object) -> bool:
    return str(getattr(obj, "__module__", "")).split(".")[0] == "ringtool"


def main() -> int:
    problems: list[str] = []
    done: set[str] = set()
    for name in MODULES:
        module = importlib.import_module(name)
        problems.extend(missing(module, done))
        try:
            pydoc.render_doc(module)
        except Exception as e:  # any failure to render is the report
            problems.append(f"{name}: pydoc cannot render it: {type(e).__name__}: {e}")
    for line in dict.fromkeys(problems):
        print(line)
    if problems:
        print(f"check_api_docs: {len(dict.fromkeys(problems))} problem(s) in the public API")
        return 1
    print(f"check_api_docs: {len(MODULES)} public modules documented and rendered")
    return 0


if __name__ == "__main__":
    sys.exit(main())
