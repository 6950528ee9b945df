#!/usr/bin/env python3
"""Checks that the orientation text is true. Run by `make lint`; exit 1 with one line
per problem (``python scripts/check_architecture.py [ROOT]``, ROOT the checkout).

- docs/ARCHITECTURE.md lists every module of ringtool/ (one table row each, no row for
  a module that does not exist) and draws the same layers as the import-linter
  contract in pyproject.toml;
- each package's docstring (``ringtool/*/__init__.py``) names its layer as that
  contract draws it (``Layer: trace | diagnostics``), and none numbers layers;
- the names of modules in package docstrings, docs/ARCHITECTURE.md and bpf/*.h and
  bpf/*.c (their comments and messages) exist: a path ending in ``.py``
  (``ringtool/event/layout.py``, ``event/layout.py``, ``layout.py``), a dotted name
  (``ringtool.event.layout``, and in backticks also ``event.layout``; a name after the
  module must be defined there),
  and, in a package docstring, a bare ````name```` (a module of the package);
- no module of ringtool/ is over :data:`MAX_LINES` lines.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: The longest a module of ringtool/ may be (docs/ARCHITECTURE.md: small modules).
MAX_LINES = 400

_PY_PATH = re.compile(r"(?<![\w/.-])((?:[\w-]+/)*\w+\.py)\b")
_DOTTED = re.compile(r"(?<![\w.])ringtool(?:\.\w+)+")
_TICKED = re.compile(r"``?([^`\n]+?)``?")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def main(argv: list[str]) -> int:
    problems = check(Path(argv[1]) if len(argv) > 1 else REPO)
    for line in problems:
        print(f"check_architecture: {line}", file=sys.stderr)
    return 1 if problems else 0


def check(repo: Path) -> list[str]:
    """Every problem of the checkout at ``repo``, one line each."""
    layers = _contract_layers(repo)
    return [
        *_listed_modules(repo),
        *_drawn_layers(repo, layers),
        *_package_layers(repo, layers),
        *_names(repo),
        *_lengths(repo),
    ]


def _modules(repo: Path) -> list[str]:
    """Every module of ringtool/, relative to it (``trace/runner.py``)."""
    return sorted(p.relative_to(repo / "ringtool").as_posix() for p in _py_files(repo))


def _py_files(repo: Path) -> list[Path]:
    return [p for p in (repo / "ringtool").rglob("*.py") if p.name != "__init__.py"]


def _contract_layers(repo: Path) -> list[str]:
    contracts = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["importlinter"]
    return list(next(c["layers"] for c in contracts["contracts"] if c["type"] == "layers"))


def _listed_modules(repo: Path) -> Iterator[str]:
    doc = (repo / "docs" / "ARCHITECTURE.md").read_text()
    listed = set(re.findall(r"^\| `([a-z_/]+\.py)` \|", doc, re.MULTILINE))
    actual = set(_modules(repo))
    for m in sorted(actual - listed):
        yield f"{m}: a module docs/ARCHITECTURE.md does not list"
    for m in sorted(listed - actual):
        yield f"{m}: listed in docs/ARCHITECTURE.md, no such module"


def _drawn_layers(repo: Path, layers: list[str]) -> Iterator[str]:
    doc = (repo / "docs" / "ARCHITECTURE.md").read_text()
    block = re.search(r"<!-- layers[^>]*-->\s*```\n(.*?)```", doc, re.DOTALL)
    drawn = block.group(1).split("\n")[:-1] if block else []
    if drawn != layers:
        yield (
            f"the layers drawn in docs/ARCHITECTURE.md ({drawn}) are not "
            f"pyproject.toml's contract ({layers})"
        )


def _docstring(init: Path) -> str:
    return ast.get_docstring(ast.parse(init.read_text()), clean=False) or ""


def _package_layers(repo: Path, layers: list[str]) -> Iterator[str]:
    for init in sorted((repo / "ringtool").glob("*/__init__.py")):
        pkg = init.parent.name
        where = f"ringtool/{pkg}/__init__.py"
        doc = _docstring(init)
        if re.search(r"\blayer \d", doc, re.IGNORECASE):
            yield f"{where}: its docstring numbers a layer (name it: `Layer: ...`)"
        line = next((x for x in layers if f"ringtool.{pkg}" in x.split(" | ")), None)
        want = line.replace("ringtool.", "") if line else None
        named = re.findall(r"^Layer: ([\w| ]+?)(?: \(|\.?$)", doc, re.MULTILINE)
        if want is None:
            yield f"{where}: ringtool.{pkg} is in no layer of pyproject.toml's contract"
        elif named != [want]:
            yield f"{where}: its docstring must name its layer as `Layer: {want}`"


def _names(repo: Path) -> Iterator[str]:
    """Module names in the orientation text that name nothing (module doc)."""
    for init in sorted((repo / "ringtool").rglob("__init__.py")):
        where = init.relative_to(repo).as_posix()
        doc = _docstring(init)
        yield from _stale(repo, where, doc, ticked=True)
        defined = _defined(init) | {p.stem for p in init.parent.iterdir()}
        for name in _TICKED.findall(doc):
            if _IDENT.fullmatch(name) and name not in defined | _top_level(repo):
                yield f"{where}: ``{name}`` is no module of {init.parent.name}"
    arch = repo / "docs" / "ARCHITECTURE.md"
    yield from _stale(repo, "docs/ARCHITECTURE.md", arch.read_text(), ticked=True)
    for src in sorted([*(repo / "bpf").glob("*.h"), *(repo / "bpf").glob("*.c")]):
        yield from _stale(repo, src.relative_to(repo).as_posix(), src.read_text(), ticked=False)


def _stale(repo: Path, where: str, text: str, *, ticked: bool) -> Iterator[str]:
    for path in sorted(set(_PY_PATH.findall(text))):
        if not _path_exists(repo, path):
            yield f"{where}: names {path}, no such module"
    dotted = set(_DOTTED.findall(text))
    if ticked:
        tops = _top_level(repo)
        for inner in _TICKED.findall(text):
            name = inner.removesuffix("()")
            file = re.search(r"\.(py|c|h|md|toml)$", name)
            if re.fullmatch(r"\w+(\.\w+)+", name) and name.split(".")[0] in tops and not file:
                dotted.add(name if name.startswith("ringtool.") else f"ringtool.{name}")
    for name in sorted(dotted):
        if not _dotted_exists(repo, name):
            yield f"{where}: names {name}, no such module or name"


def _top_level(repo: Path) -> set[str]:
    """ringtool's packages and top-level modules, and ``ringtool`` itself."""
    root = repo / "ringtool"
    return {"ringtool"} | {p.stem for p in root.iterdir() if p.suffix == ".py" or p.is_dir()}


def _path_exists(repo: Path, path: str) -> bool:
    if "/" not in path:
        return any(
            True for top in ("ringtool", "scripts", "tests") for _ in (repo / top).rglob(path)
        )
    return (repo / path).is_file() or (repo / "ringtool" / path).is_file()


def _dotted_exists(repo: Path, name: str) -> bool:
    """``ringtool.a.b[.c...]``: a package or module, then names it defines."""
    here = repo / "ringtool"
    parts = name.split(".")[1:]
    module = here / "__init__.py"
    while parts:
        if (here / parts[0] / "__init__.py").is_file():
            here = here / parts.pop(0)
            module = here / "__init__.py"
        elif (here / f"{parts[0]}.py").is_file():
            module = here / f"{parts.pop(0)}.py"
            break
        else:
            break
    return not parts or parts[0] in _defined(module)


def _defined(module: Path) -> set[str]:
    """The names ``module`` binds at its top level (and its string constants: the lazy
    names of a package's ``__getattr__``)."""
    tree = ast.parse(module.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` imports
            for sub in node.body:
                if isinstance(sub, ast.ImportFrom):
                    names |= {a.asname or a.name for a in sub.names}
    return names


def _lengths(repo: Path) -> Iterator[str]:
    for module in _modules(repo):
        lines = len((repo / "ringtool" / module).read_text().splitlines())
        if lines > MAX_LINES:
            yield f"ringtool/{module}: {lines} lines, over {MAX_LINES} (split it)"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
