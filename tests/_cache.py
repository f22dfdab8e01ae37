"""What several tests compute from the same inputs, computed once per pytest process (each
xdist worker has its own): ``dptrace.load`` of a path, and the findings of that Dataset
(``dptrace.findings.build`` with no options).

A path is loaded exactly as given (source names are the path as given, so the same folder
named by an absolute and a relative path is two entries). The Dataset is shared by every test
that asks for it: tests only read it (a test that changes a table works on a copy it makes,
or loads its own). Findings are handed out as a copy each time.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pandas as pd

import dptrace
from dptrace.findings import build

#: ../shared/realdata beside the clone (the real inputs)
REAL = Path(__file__).resolve().parents[2] / "shared" / "realdata"


@cache
def load(path: Path) -> dptrace.Dataset:
    """``dptrace.load(path)``, once per process; read it, do not change it."""
    return dptrace.load(path)


@cache
def _findings(path: Path) -> pd.DataFrame:
    return build(load(path))


def findings(path: Path) -> pd.DataFrame:
    """``dptrace.findings.build(dptrace.load(path))``, computed once per process (a copy)."""
    return _findings(path).copy()
