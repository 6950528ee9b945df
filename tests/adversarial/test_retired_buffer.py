"""A reader that was busy while the bridge resized is not trapped on the retired buffer
by a consumer that rewrites the retired page's generation word (docs/kmes.md §7.8:
a consumer can harm only itself; readers detect what they cannot trust)."""

from __future__ import annotations

import mmap
import struct
import subprocess
import time
from pathlib import Path

import pytest

from ringtool.kmes.attach import attach
from tests.helpers import rawproto as P
from tests.helpers.kmes import bridge

pytestmark = [pytest.mark.adversarial, pytest.mark.kernel]

BUSY = 8.0  # seconds the honest reader does not look at its buffers after the resize


def test_busy_reader_is_not_trapped_on_a_retired_buffer(tmp_path: Path) -> None:
    with bridge(tmp_path) as b:
        sock = str(b.sock)
        readers = attach(sock, start="head")
        hostile = P.raw_attach(sock)
        pages = [
            mmap.mmap(meta, P.PAGE, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            for meta, _data in P.pairs(hostile)
        ]
        try:
            old_gen = [r.generation for r in readers]
            for r in readers:
                r.drain()
            b.resize(2 << 20)
            time.sleep(BUSY)  # the honest reader is busy elsewhere meanwhile
            for page, gen in zip(pages, old_gen, strict=True):
                struct.pack_into("<Q", page, 32, gen)  # "this buffer is still current"
            for _ in range(40):
                subprocess.run(["/bin/true"], check=True)
            got = {r.cpu: 0 for r in readers}
            end = time.monotonic() + 5.0
            while time.monotonic() < end and any(
                r.generation <= g for r, g in zip(readers, old_gen, strict=True)
            ):
                for r in readers:
                    got[r.cpu] += len(r.drain())
                time.sleep(0.05)
            fresh = attach(sock, start="tail")
            there = {r.cpu: len(r.drain()) for r in fresh}
            for r in fresh:
                r.close()
            stuck = [r.cpu for r, g in zip(readers, old_gen, strict=True) if r.generation <= g]
            assert not stuck, (
                f"CPUs {stuck}: the honest reader stayed on the retired buffer (got {got}, "
                f"generations {[r.generation for r in readers]}) while a fresh reader sees "
                f"{there}"
            )
        finally:
            for page in pages:
                page.close()
            hostile.close()
            for r in readers:
                r.close()
