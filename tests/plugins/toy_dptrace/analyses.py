"""The toy format's derived table: each rank's share of time spent waiting."""

from __future__ import annotations

import pandas as pd

from dptrace.analyses import Analyses, Derived, register_derived


def _waits(a: Analyses) -> pd.DataFrame | None:
    if not a.has("toy_ranks"):
        return None
    t = a.table("toy_ranks")
    total = t["busy_s"] + t["wait_s"]
    return t.assign(wait_share=(t["wait_s"] / total).astype("float64"))


register_derived(Derived("toy.waits", _waits, "each rank's share of time waiting"))
