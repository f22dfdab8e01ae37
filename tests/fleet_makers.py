"""The fleet tests' shared helpers: the two fleet generators (tests/fixtures/fleet/make_fleet.py
and scripts/make_small_fleet.py, scripts outside any package, imported by path once), and
the comparison of two surveys' fleet tables (timings aside, rows in run-key order)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType

import pandas as pd

HERE = Path(__file__).resolve().parent
#: what differs between two surveys of the same folders by design: how long each took
TIMINGS = ("parse_s", "analysis_s")
#: the fleet tables, by their names in a survey's derived tables
TABLES = ("fleet", "fleet_findings", "fleet_ranks", "job_figures")


def _module(name: str, path: Path) -> ModuleType:
    """The script at ``path`` imported once as module ``name``."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


make_fleet = _module("make_fleet", HERE / "fixtures" / "fleet" / "make_fleet.py")
make_small_fleet = _module("make_small_fleet", HERE.parent / "scripts" / "make_small_fleet.py")


def canonical(df: pd.DataFrame, ignore: tuple[str, ...] = ()) -> pd.DataFrame:
    """``df`` without timings (and ``ignore``), rows in run-key order (each run's own rows
    in their order: tasks complete in any order), values as Python objects, missing as
    None."""
    out = df.drop(columns=[c for c in (*TIMINGS, *ignore) if c in df.columns])
    out = out.assign(_at=range(len(out))).sort_values(["run_key", "_at"], kind="stable")
    out = out.drop(columns="_at").reset_index(drop=True)
    return out.astype(object).where(out.notna(), None)


def assert_same_tables(a: Mapping[str, pd.DataFrame], b: Mapping[str, pd.DataFrame],
                       what: str, ignore: tuple[str, ...] = ()) -> None:
    """The fleet tables of ``a`` and ``b`` (by name) have the same columns, dtypes and
    values (:func:`canonical`)."""
    for name in TABLES:
        x, y = a[name], b[name]
        assert list(x.columns) == list(y.columns), (what, name)
        assert [str(t) for t in x.dtypes] == [str(t) for t in y.dtypes], (what, name)
        pd.testing.assert_frame_equal(canonical(x, ignore), canonical(y, ignore),
                                      check_dtype=False, obj=f"{what}: {name}")


def tables(fleet: object) -> dict[str, pd.DataFrame]:
    """A :class:`dptrace.fleet.Fleet`'s fleet tables by their derived-table names."""
    return {"fleet": fleet.fleet, "fleet_findings": fleet.findings,   # type: ignore[attr-defined]
            "fleet_ranks": fleet.ranks, "job_figures": fleet.job_figures}   # type: ignore[attr-defined]
