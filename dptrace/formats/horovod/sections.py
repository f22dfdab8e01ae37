"""The Horovod timeline section: where the time goes, straggler ranks, fusion, top tensors.

:func:`build` makes the section's tables from the ``hvd_*`` tables (the JSON output is
those tables); :mod:`.terminal` draws them, one panel per file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ... import analyses
from ...dataset import Dataset
from ...findings import thresholds as th
from ...reports.model import Section
from ...reports.registry import SectionSpec, register_section
from . import compute as hv
from . import findings as rules

#: idle gaps kept per timeline file (the longest)
MAX_GAPS = 5

CAPTION = (
    "Per timeline file (rank 0 writes it; it covers all ranks). Wall time is the time at least "
    "one tensor was in a state; tensor time sums the copies each fused tensor carries, so it "
    "can exceed the span. A rank is 'last' when it was the final one to report a tensor ready: "
    "the others waited for it (only negotiations with ticks from 2+ ranks count; Horovod's "
    "response cache skips the ticks). A rank is judged on the steady state only (a tensor's "
    "second negotiation or later; start-up is warm-up): 'waited' counts the negotiations in "
    "which it was last by 1 ms or more, and the rank the negotiation_straggler finding names "
    "is marked. Rates: bytes / op time (queueing and copies included) and bytes / time in the "
    "collective activity itself; none for bins with under 1 ms.")

#: the steady-state columns :func:`stragglers` adds to ``straggler_ranks``
STEADY_COLUMNS = ("steady_compared", "steady_waited", "steady_waited_share",
                  "steady_mean_lag_us", "steady_max_lag_us", "steady_from_us", "straggler")


def build(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    """The report section for every Horovod timeline in ``ds``; None when there is none."""
    runs = ds["hvd_runs"]
    if runs.empty:
        return None
    a = analyses.of(ds, opts)
    acts, tensors = ds["hvd_activities"], ds["hvd_tensors"]
    groups = a["horovod.fusion_groups"]
    gaps = hv.idle_gaps(acts)
    return Section(SPEC.name, SPEC.title, CAPTION, {
        "runs": runs,
        "time": hv.time_summary(acts, runs, gaps),
        "activities": hv.activity_breakdown(acts, runs),
        "stragglers": stragglers(ds["hvd_ready"], acts, runs, opts.get("thresholds"),
                                 a["horovod.stragglers"]),
        "fusion": hv.fusion_summary(groups, acts),
        "fusion_sizes": hv.fusion_sizes(groups),
        "small_allreduces": a["horovod.small_allreduces"],
        "throughput": hv.op_throughput(groups, tensors, acts),
        "cycles": hv.cycle_stats(ds["hvd_cycles"]),
        "idle_gaps": hv.longest_gaps(gaps, MAX_GAPS),
        "top_tensors": hv.top_tensors(tensors, 10),
    }, figure_args={"cycles": ds["hvd_cycles"]})


def stragglers(ready: pd.DataFrame, acts: pd.DataFrame, runs: pd.DataFrame,
               thresholds: Any = None, phases: pd.DataFrame | None = None) -> pd.DataFrame:
    """``horovod.straggler_ranks`` (every compared negotiation) with the steady-state
    judgement beside each rank (``horovod.phase_stragglers``' steady rows): the steady
    state's compared negotiations of the source (``steady_compared``, 0 when none), the times
    the others waited for the rank there (``steady_waited``: last, ``WAIT_US`` or more after
    the first rank), their share, its mean and max lag there, when the steady state began,
    and ``straggler``: the rank the ``negotiation_straggler`` finding names (the rule itself,
    with the report's ``thresholds``), so that the drawer marks that rank and no other.
    Sorted by source, the straggler first, then ``steady_waited`` and ``last`` descending."""
    ranks = hv.straggler_ranks(ready)
    k = [c for c in ranks.columns if c in ("run", "source")]
    if phases is None:   # (the report's context has it: ``horovod.stragglers``)
        phases = hv.phase_stragglers(ready, acts)
    steady = phases[phases["phase"].astype(str) == hv.STEADY]
    text = {c: (lambda df, c=c: df[c].astype(str)) for c in k}
    keys = [f"_{c}" for c in k]
    own = ranks.assign(**{f"_{c}": ranks[c].astype(str) for c in k},
                       _rank=ranks["rank"].astype("Int64"))
    per_rank = steady.assign(**text).rename(columns={c: f"_{c}" for c in k}).assign(
        _rank=steady["rank"].astype("Int64"), steady_waited=steady["waited"],
        steady_waited_share=steady["waited_share"], steady_mean_lag_us=steady["mean_lag_us"],
        steady_max_lag_us=steady["max_lag_us"])[
        [*keys, "_rank", "steady_waited", "steady_waited_share", "steady_mean_lag_us",
         "steady_max_lag_us"]]
    per_src = phases.assign(**text).rename(columns={c: f"_{c}" for c in k})
    per_src = per_src.assign(_n=np.where(per_src["phase"].astype(str) == hv.STEADY,
                                         per_src["compared"], 0)).groupby(keys, sort=False).agg(
        steady_compared=("_n", "max"), steady_from_us=("steady_from_us", "first")).reset_index()
    named = pd.DataFrame(_named(phases, runs, thresholds), columns=[*keys, "_rank"]).assign(
        straggler=True)
    out = (own.merge(per_rank, on=[*keys, "_rank"], how="left")
           .merge(per_src, on=keys, how="left").merge(named, on=[*keys, "_rank"], how="left"))
    out["steady_compared"] = out["steady_compared"].fillna(0).astype("int64")
    out["steady_waited"] = out["steady_waited"].fillna(0).astype("int64")
    out["steady_waited_share"] = np.where(out["steady_compared"] > 0,
                                          out["steady_waited"] / out["steady_compared"].where(
                                              out["steady_compared"] > 0), np.nan)
    out["straggler"] = out["straggler"].astype("boolean").fillna(False).astype(bool)
    out = out.sort_values([*keys, "straggler", "steady_waited", "last", "rank"],
                          ascending=[True] * len(keys) + [False, False, False, True],
                          kind="stable")
    return out[[*ranks.columns, *STEADY_COLUMNS]].reset_index(drop=True)


def _named(phases: pd.DataFrame, runs: pd.DataFrame, thresholds: Any) -> list[tuple[Any, ...]]:
    """(run, source, rank) of each rank the ``negotiation_straggler`` rule names (without a
    ``run`` column: (source, rank)), run by run as the findings judge them, with the report's
    threshold override."""
    if phases.empty:
        return []
    kind = th.overridable()["negotiation_straggler"]
    given = th.parse_overrides(thresholds or {})
    share = kind.argument(given[kind.kind]) if kind.kind in given else rules.LAST_SHARE
    has_run = "run" in phases.columns
    by = phases["run"].astype(str) if has_run else pd.Series("", index=phases.index)
    out: list[tuple[Any, ...]] = []
    for run, part in phases.groupby(by, sort=False):
        mine = runs[runs["run"].astype(str) == run] if has_run and "run" in runs.columns \
            else runs
        for f in rules.negotiation_stragglers(part, mine, share=share):
            if f.kind == "negotiation_straggler" and f.rank is not None:
                key = (run, str(f.origin)) if has_run else (str(f.origin),)
                out.append((*key, int(f.rank)))
    return out


SPEC = register_section(SectionSpec(
    "horovod", "Horovod timeline", order=50, build=build,
    figures="dptrace.formats.horovod.figures:horovod_figures",
    terminal="dptrace.formats.horovod.terminal:draw_horovod"))
