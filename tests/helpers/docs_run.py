"""The commands of README.md and docs/*.md marked runnable, run as written.

Markers (an HTML comment on the line right above a fenced block; docs/development.md,
"Docs that run"):

* ``<!-- runnable -->``: a ``sh`` block, run as written by bash, as root;
* ``<!-- runnable: file NAME -->``: the block is a file the text tells the reader to
  save (a configuration, a Python script): written as NAME in the working directory
  before the page's blocks run;
* ``<!-- runnable: output -->``: what the runnable block above prints, exactly.

:func:`run_page` runs one page's blocks in order in one private network and mount
namespace: loopback up (nothing else, so ports such as 4222 are free and nothing
reaches the network), ``/tmp`` and ``/var/lib`` private and empty, ``broker`` resolving
to 127.0.0.1 (the fleet guide's host name), and ``ringtool``, ``ringtool-python`` and
``sudo`` on the PATH running this checkout (``sudo`` runs its command: the tests are
root already, and Debian's sudo would put the installed ringtool first). Each block runs
in a session of its own, which is killed when the block ends (what it left in the
background: a ``nats-server &``). A block's command that fails is named on its stderr;
the block's status is then 1.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.paths import PY, ROOT

MARKER = re.compile(r"^<!-- runnable(?:: (file (?P<file>\S+)|(?P<output>output)))? -->$")
FENCE = re.compile(r"^```(?P<info>\S*)\s*$")
#: How long one block may run (it runs its own `-d 5` traces, BPF compiles included).
BLOCK_TIMEOUT_S = 300


@dataclass(frozen=True)
class Block:
    """One marked block: ``kind`` is ``run``, ``file`` or ``output``; ``line`` where it
    starts in its page (1-based)."""

    kind: str
    text: str
    line: int
    info: str = ""
    name: str = ""


def blocks(page: Path) -> list[Block]:
    """The marked blocks of ``page``, in order; AssertionError for a marker that is not
    right above a fence, or a ``runnable`` block that is not ``sh``."""
    lines = page.read_text().splitlines()
    out: list[Block] = []
    for i, ln in enumerate(lines):
        m = MARKER.match(ln.strip())
        if m is None:
            continue
        fence = FENCE.match(lines[i + 1]) if i + 1 < len(lines) else None
        assert fence is not None, f"{page.name}:{i + 1}: a runnable marker not above a fence"
        end = next(j for j in range(i + 2, len(lines)) if lines[j].startswith("```"))
        text = "\n".join(lines[i + 2 : end]) + "\n"
        info = fence.group("info")
        if m.group("file"):
            out.append(Block("file", text, i + 2, info, m.group("file")))
        elif m.group("output"):
            out.append(Block("output", text, i + 2, info))
        else:
            assert info == "sh", f"{page.name}:{i + 2}: a runnable block must be ```sh"
            out.append(Block("run", text, i + 2, info))
    return out


def pages() -> list[Path]:
    """README.md and docs/*.md that have runnable blocks."""
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [p for p in found if any(b.kind == "run" for b in blocks(p))]


@dataclass(frozen=True)
class Ran:
    """One run block's result."""

    block: Block
    status: int
    stdout: str
    stderr: str


_SHIM = '#!/bin/sh\nexport PYTHONPATH={root}\nexec {cmd} "$@"\n'

#: Each block as bash runs it: every failing command named (an interactive shell would
#: go on after it too), pipelines fail when any part does.
_WRAP = """set -o pipefail
__status=0
trap 'echo "docs-run: status $? from: $BASH_COMMAND" >&2; __status=1' ERR
{text}
exit $__status
"""

_DRIVER = """set -u
ip link set lo up
mount -t tmpfs ringtool-docs /var/lib
printf '127.0.0.1 localhost broker\\n::1 localhost\\n' > {priv}/hosts
mount --bind {priv}/hosts /etc/hosts
mount --bind {priv} /tmp
cd /tmp/work
export PATH=/tmp/bin:$PATH HOME=/tmp/work
for n in $(seq 1 {count}); do
    setsid timeout {timeout} bash /tmp/blocks/$n.sh </dev/null >/tmp/out/$n.out 2>/tmp/out/$n.err &
    pid=$!
    wait $pid
    echo $? > /tmp/out/$n.rc
    kill -TERM -- -$pid 2>/dev/null && sleep 1
    kill -KILL -- -$pid 2>/dev/null
done
exit 0
"""


def run_page(page: Path, priv: Path) -> list[Ran]:
    """Run ``page``'s runnable blocks (module doc) with ``priv`` as the private /tmp;
    each block's result, in order."""
    for d in ("bin", "work", "blocks", "out"):
        (priv / d).mkdir(parents=True)
    shims = {"ringtool": f"{shlex.quote(PY)} -m ringtool", "ringtool-python": shlex.quote(PY),
             "sudo": ""}  # fmt: skip
    for name, cmd in shims.items():
        shim = priv / "bin" / name
        shim.write_text(_SHIM.format(root=shlex.quote(str(ROOT)), cmd=cmd))
        shim.chmod(0o755)
    found = blocks(page)
    runs = [b for b in found if b.kind == "run"]
    for b in found:
        if b.kind == "file":
            (priv / "work" / b.name).write_text(b.text)
    for n, b in enumerate(runs, 1):
        (priv / "blocks" / f"{n}.sh").write_text(_WRAP.format(text=b.text))
    driver = _DRIVER.format(priv=shlex.quote(str(priv)), count=len(runs),
                            timeout=BLOCK_TIMEOUT_S)  # fmt: skip
    done = subprocess.run(
        ["unshare", "--net", "--mount", "--propagation", "private", "bash", "-c", driver],
        capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S * len(runs) + 60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = priv / "out"
    return [Ran(b, int((out / f"{n}.rc").read_text()), (out / f"{n}.out").read_text(),
                (out / f"{n}.err").read_text()) for n, b in enumerate(runs, 1)]  # fmt: skip


def expected_outputs(page: Path) -> dict[int, str]:
    """For each run block (its index among the page's run blocks) followed by an
    ``output`` block: the text it must print."""
    want: dict[int, str] = {}
    n = -1
    for b in blocks(page):
        if b.kind == "run":
            n += 1
        elif b.kind == "output":
            assert n >= 0, f"{page.name}:{b.line}: an output block before any runnable block"
            want[n] = b.text
    return want


__all__ = ["Block", "Ran", "blocks", "expected_outputs", "pages", "run_page"]
