"""Every format with routes: ``engine="fast"`` and ``engine="general"`` give the same tables,
sources and problems on every real file (tests/fixtures/<format> and ../shared/realdata);
and ``read_<format>`` is there for every registered format, made from the registry.

The fast routes decline to the general one when the layout does not fit, so on most real
files both engines run much the same code for part of the file; the route tests of each
format (test_trainlog_fast.py, test_mpitrace_fast.py, test_sntilestat_fast.py) check that
the fast route is taken where it should be, and agrees on generated and mutated inputs.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import api, registry

HERE = Path(__file__).resolve().parent
REAL = HERE.parent.parent / "shared" / "realdata"
#: where each format's real files are
DIRS = {
    "trainlog": [HERE / "fixtures" / "trainlog", REAL / "trainlog", REAL / "perrank"],
    "mpitrace": [HERE / "fixtures" / "mpitrace", REAL / "mpitrace"],
    "sntilestat": [HERE / "fixtures" / "sntilestat", REAL / "sntilestat"],
}
ENGINES = {name: p.spec.engines for name, p in registry.parsers().items()}


def _files(fmt: str) -> list[Path]:
    return sorted(p for d in DIRS[fmt] if d.is_dir() for p in d.rglob("*")
                  if p.is_file() and p.suffix != ".tsv" and p.name != "PROVENANCE.tsv")


def _dirs(fmt: str) -> list[Path]:
    """Directories holding several files of the format (read as one batch)."""
    return sorted({p.parent for p in _files(fmt)
                   if sum(1 for q in p.parent.iterdir() if q.is_file()) > 1})


CASES = [(fmt, path) for fmt in sorted(DIRS) for path in _files(fmt)]


def same(a: dptrace.Dataset, b: dptrace.Dataset) -> None:
    """The two datasets hold the same tables, bit for bit, and the same sources and problems."""
    assert list(a.tables) == list(b.tables)
    for table in a.tables:
        pd.testing.assert_frame_equal(a[table], b[table], check_exact=True)
        # bit for bit: assert_frame_equal takes -0.0 for 0.0 and NaN for NA in places
        assert repr(a[table].to_dict("list")) == repr(b[table].to_dict("list")), table
    pd.testing.assert_frame_equal(a.sources, b.sources)
    assert repr(a.problems.to_dict("list")) == repr(b.problems.to_dict("list"))


def test_every_format_with_real_files_has_both_engines() -> None:
    for fmt in DIRS:
        assert ENGINES[fmt] == ("fast", "general"), fmt
    assert all(_files(fmt) for fmt in DIRS)


@pytest.mark.parametrize("fmt,path", CASES, ids=[f"{f}:{p.name}" for f, p in CASES])
def test_engines_agree_on_every_real_file(fmt: str, path: Path) -> None:
    read = getattr(dptrace, f"read_{fmt}")
    fast = read(path, engine="fast")
    same(fast, read(path, engine="general"))
    same(fast, read(path))   # auto is the fast route


@pytest.mark.parametrize("path", _dirs("mpitrace"), ids=lambda p: p.name)
def test_mpitrace_engines_agree_on_directories(path: Path) -> None:
    """Many rank files at once: the fast engine converts plain files in batches."""
    same(dptrace.read_mpitrace(path, engine="fast"),
         dptrace.read_mpitrace(path, engine="general"))


def test_read_function_for_every_registered_format() -> None:
    names = registry.parsers()
    assert set(names) >= {"trainlog", "mpitrace", "horovod", "sntilestat"}
    assert sorted(api.read_names()) == sorted(f"read_{n}" for n in names)
    for name, parser in names.items():
        fn = getattr(dptrace, f"read_{name}")
        assert fn is getattr(api, f"read_{name}")
        assert f"read_{name}" in dptrace.__all__
        assert fn.__name__ == f"read_{name}" and fn.__doc__
        params = list(inspect.signature(fn).parameters.values())
        assert params[0].name == "paths"
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:])
        assert ("engine" in inspect.signature(fn).parameters) == bool(parser.spec.engines)


def test_engine_is_checked() -> None:
    path = HERE / "fixtures" / "sntilestat"
    with pytest.raises(ValueError, match="engine must be one of auto, fast, general"):
        dptrace.read_sntilestat(path, engine="c")
    with pytest.raises(TypeError, match="one route"):
        dptrace.read_horovod(HERE / "fixtures" / "horovod", engine="fast")
    with pytest.raises(TypeError):
        dptrace.read_trainlog(path, 1)   # options are keyword-only


def test_read_sntilestat_equals_load_with_the_format_forced() -> None:
    path = HERE / "fixtures" / "sntilestat"
    same(dptrace.read_sntilestat(path), dptrace.load(path, format="sntilestat"))
