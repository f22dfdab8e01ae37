"""Sources found in a directory are given their path's text at once (sources._child_of) and
their absolute path from their directory's (_Expander.tree): they must be the sources the
constructor makes of the path's text, with the same path text, suffix rules and absolute
path (a directory given twice is read once)."""

from __future__ import annotations

import gc
import os
from pathlib import Path

import pytest

from dptrace import sources
from dptrace.sources import Source, expand

NAMES = ["mpi_profile.1.0", "a.log.gz", "b.tar.bz2", "c.XZ", "noext", "trailing.", "x.y.z",
         "caf\u00e9.txt", "sp ace.gz"]


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    top = tmp_path / "top"
    (top / "sub").mkdir(parents=True)
    for name in NAMES:
        (top / name).write_bytes(b"x\n")
        (top / "sub" / name).write_bytes(b"y\n")
    return top


def _made(src: Source) -> Source:
    return Source(src.name, Path(os.fsdecode(src.path)), False, None, False,
                  src.max_decompressed)


@pytest.mark.parametrize("spelling", ["{t}", "{t}/", "{t}//", "{t}/.", "{t}/../top",
                                      "{rel}", "./{rel}"])
def test_found_sources_are_the_constructors(tree: Path, spelling: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree.parent)
    arg = spelling.format(t=tree, rel=tree.name)
    origins: list[int] = []
    found, problems = expand(arg, origins=origins)
    assert not problems and len(found) == 2 * len(NAMES)
    for src in found:
        fresh = _made(src)
        assert src == fresh
        assert str(src.path) == str(Path(*src.path.parts))   # the text pathlib formats
        assert os.fspath(src.path) == os.fspath(fresh.path)
        assert src.compression == fresh.compression
        assert src.stem_name == fresh.stem_name
        assert src.explicit is False and src.unreadable is None and not src.special
        assert src.head() == (b"y\n" if "sub" in src.path.parts else b"x\n")


def test_a_directory_given_twice_is_read_once(tree: Path) -> None:
    repeats: list[tuple[int, int]] = []
    found, _ = expand([str(tree), str(tree) + "/.", str(tree / "sub" / ".." )],
                      repeats=repeats)
    assert len(found) == 2 * len(NAMES)
    assert len(repeats) == 2 * 2 * len(NAMES)


def test_the_collector_runs_less_often_while_expanding_and_as_before_after(
        tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()
    seen = []
    listing = sources._Expander.listing

    def spy(self: sources._Expander, d: str, label: str) -> list[os.DirEntry[str]]:
        seen.append(gc.get_threshold()[0])
        return listing(self, d, label)

    monkeypatch.setattr(sources._Expander, "listing", spy)
    expand(str(tree))
    assert seen and set(seen) == {max(before[0], sources.EXPAND_GC_THRESHOLD)}
    assert gc.get_threshold() == before

    def fail(self: sources._Expander, d: str, label: str) -> list[os.DirEntry[str]]:
        raise RuntimeError("listing failed")

    monkeypatch.setattr(sources._Expander, "listing", fail)
    with pytest.raises(RuntimeError):
        expand(str(tree))
    assert gc.get_threshold() == before
