"""The program cache's bound: old and surplus entries go when an entry is written,
a load keeps its entry, dead writers' temporary files go, other files stay."""

from __future__ import annotations

import os
import time
from pathlib import Path

from ringtool.programs.cache_prune import MAX_AGE_S, STALE_TMP_S, TOUCH_AFTER_S, Bound, prune
from ringtool.programs.cache_store import ProgramStore

DAY = 86400.0


def _store(tmp_path: Path, bound: Bound) -> tuple[ProgramStore, Path]:
    path = tmp_path / "programs"
    store = ProgramStore(str(path), bound=bound)
    store.open()
    return store, path


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_a_write_deletes_entries_unused_too_long_and_the_oldest_beyond_the_bound(
    tmp_path: Path,
) -> None:
    store, path = _store(tmp_path, Bound(max_entries=4, max_age_s=MAX_AGE_S))
    for i in range(6):  # k0 the oldest, k5 the newest; k0 also past the age bound
        store.store_object(f"k{i}", b"object %d" % i)
        _age(path / f"k{i}.o", MAX_AGE_S + DAY if i == 0 else (6 - i) * DAY)
    (path / "notes.txt").write_text("not the cache's")
    store.store_object("new", b"the entry just written")
    assert sorted(os.listdir(path)) == ["k3.o", "k4.o", "k5.o", "new.o", "notes.txt"]
    assert store.load_object("new") == b"the entry just written"
    store.close()


def test_an_unused_entry_goes_even_under_the_count_bound(tmp_path: Path) -> None:
    store, path = _store(tmp_path, Bound())
    store.store_object("old", b"x")
    store.store_object("recent", b"y")
    _age(path / "old.o", MAX_AGE_S + DAY)
    _age(path / "recent.o", MAX_AGE_S - DAY)
    store.store_object("new", b"z")
    assert sorted(os.listdir(path)) == ["new.o", "recent.o"]
    store.close()


def test_a_load_marks_its_entry_used_so_it_outlives_newer_unused_ones(tmp_path: Path) -> None:
    store, path = _store(tmp_path, Bound(max_entries=2))
    store.store_object("used", b"u")
    store.store_object("idle", b"i")
    _age(path / "used.o", 10 * DAY)
    _age(path / "idle.o", 5 * DAY)
    assert store.load_object("used") == b"u"  # older than a day: touched now
    assert time.time() - (path / "used.o").stat().st_mtime < TOUCH_AFTER_S
    store.store_object("new", b"n")
    assert sorted(os.listdir(path)) == ["new.o", "used.o"]
    store.close()


def test_a_dead_writers_temporary_file_goes_a_live_ones_stays(tmp_path: Path) -> None:
    store, path = _store(tmp_path, Bound())
    dead, live = path / ".k1.prog.123.tmp", path / ".k2.prog.456.tmp"
    dead.write_bytes(b"half")
    live.write_bytes(b"being written")
    _age(dead, STALE_TMP_S + 60)
    store.store_object("new", b"n")
    assert sorted(os.listdir(path)) == [live.name, "new.o"]
    store.close()


def test_prune_keeps_the_newest_and_the_file_written_whatever_the_times(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir(mode=0o700)
    now = time.time()
    ages = [3.0, 1.0, 7.0, 2.0, 9.0, 0.5]
    for i, days in enumerate(ages):
        (d / f"e{i}.prog").write_bytes(b"e")
        os.utime(d / f"e{i}.prog", (now - days * DAY,) * 2)
    (d / "kept.prog").write_bytes(b"k")
    os.utime(d / "kept.prog", (now - 20 * DAY,) * 2)  # the one written: kept all the same
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        removed = prune(fd, "kept.prog", Bound(max_entries=3), now=now)
    finally:
        os.close(fd)
    assert sorted(os.listdir(d)) == ["e1.prog", "e5.prog", "kept.prog"]
    assert sorted(removed) == ["e0.prog", "e2.prog", "e3.prog", "e4.prog"]
