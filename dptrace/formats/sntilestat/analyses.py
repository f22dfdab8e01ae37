"""The derived tables of SambaNova tile snapshots."""

from __future__ import annotations

import pandas as pd

from ...analyses import Analyses, Derived, register_derived
from . import compute as tl


def _idle(a: Analyses) -> pd.DataFrame | None:
    return tl.idle_tiles(a.table("tiles")) if a.has("tiles") else None


def _instances(a: Analyses) -> pd.DataFrame | None:
    return tl.instances(a.table("tiles")) if a.has("tiles") else None


register_derived(
    Derived("tiles.idle_tiles", _idle, "tiles idle in every snapshot"),
    Derived("tiles.instances", _instances, "per SambaNova instance: %exec, loads, idle"),
)
