"""The formats' entry points read from the path's metadata directories
(:func:`dptrace.formats._entry_points`, which spares a small report importlib.metadata)
equal what ``importlib.metadata.entry_points(group=...)`` finds on the same path:
first distribution of a normalised name wins, other groups and comments ignored,
egg-info directories read, distributions without entry points skipped."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.machinery import PathFinder
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from dptrace import formats

GROUP = formats.ENTRY_POINT_GROUP


def _dist(root: Path, dirname: str, text: str | None) -> None:
    d = root / dirname
    d.mkdir(parents=True)
    (d / "METADATA" if dirname.endswith(".dist-info") else d / "PKG-INFO").write_text(
        f"Metadata-Version: 2.1\nName: {dirname.split('-')[0]}\nVersion: 1.0\n")
    if text is not None:
        (d / "entry_points.txt").write_text(text)


@pytest.fixture
def sites(tmp_path, monkeypatch):
    a, b = tmp_path / "a", tmp_path / "b"
    _dist(a, "alpha_fmt-1.0.dist-info",
          f"# a comment\n[console_scripts]\nalpha = alpha:main\n\n[{GROUP}]\n"
          " alphafmt = alpha_pkg.fmt \n")
    _dist(a, "Beta.Fmt-2.0.dist-info", f"[{GROUP}]\nbetafmt = beta_pkg:x\n")
    _dist(a, "nothing-1.0.dist-info", None)
    _dist(a, "gamma-0.1.egg-info", f"[{GROUP}]\ngammafmt = gamma_pkg\n")
    # the same distribution (normalised name) later on the path: not read again
    _dist(b, "beta_fmt-3.0.dist-info", f"[{GROUP}]\nshadowed = beta_old\n")
    _dist(b, "delta-1.0.dist-info", f"[other]\nx = y\n[{GROUP}]\ndeltafmt = delta_pkg\n")
    monkeypatch.setattr(sys, "path", [str(a), str(tmp_path / "missing"), str(b)])
    # the standard finders only (a dependency may have put importlib_metadata's own finder
    # there, as some do on Python 3.10: then both readers ask it, see the test below)
    monkeypatch.setattr(sys, "meta_path", [f for f in sys.meta_path if f is PathFinder
                                           or not hasattr(f, "find_distributions")])
    return a, b


def _importlib_metadata_in_a_fresh_process() -> list[tuple[str, str]]:
    """What importlib.metadata finds on this process's path, asked in a process of its own
    (no state another test left in this one: on Python 3.10 the suite's run once got
    nothing where a process of its own found every entry point)."""
    code = ("import json, sys\n"
            "from importlib.machinery import PathFinder\n"
            "from importlib.metadata import entry_points\n"
            f"sys.path[:] = {sys.path!r}\n"
            "sys.meta_path[:] = [f for f in sys.meta_path if f is PathFinder\n"
            "                    or not hasattr(f, 'find_distributions')]\n"
            f"print(json.dumps([[e.name, e.value] for e in entry_points(group={GROUP!r})]))\n")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return [(name, value) for name, value in json.loads(out)]


def test_equal_to_importlib_metadata(sites):
    ours = formats._entry_points()
    assert ours is not None
    theirs = _importlib_metadata_in_a_fresh_process()
    assert sorted(ours) == sorted(theirs)
    assert ("shadowed", "beta_old") not in ours
    assert {n for n, _ in ours} == {"alphafmt", "betafmt", "gammafmt", "deltafmt"}


def test_a_zip_on_the_path_asks_importlib_metadata(sites, tmp_path, monkeypatch):
    z = tmp_path / "lib.zip"
    z.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    monkeypatch.setattr(sys, "path", [*sys.path, str(z)])
    assert formats._entry_points() is None


def test_a_finder_of_distributions_asks_importlib_metadata(sites, monkeypatch):
    class Finder:
        def find_spec(self, *args: object) -> None:
            return None

        def find_distributions(self, *args: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert formats._entry_points() is None


def test_the_running_environment(monkeypatch):
    ours = formats._entry_points()
    if ours is None:
        pytest.skip("the path holds what importlib.metadata must read itself")
    theirs = [(ep.name, ep.value) for ep in entry_points(group=GROUP)]
    assert sorted(ours) == sorted(theirs)
