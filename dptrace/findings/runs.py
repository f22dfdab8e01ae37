"""Findings about runs side by side: what changed from a base run to a candidate
(``dptrace compare``), and how the job scales (``dptrace scaling``).

Each rule is a small pure function from the comparison tables of
:mod:`dptrace.analysis.compare` and :mod:`dptrace.analysis.scaling` to :class:`Finding`
rows; their thresholds are in :mod:`.thresholds` (``THROUGHPUT_CHANGE_PCT``,
``COMM_CHANGE_PCT``, ``SCALING_EFFICIENCY``), overridable like the others. The findings come
first in the compare and scaling reports: the change of the job figure, where the time went
(the largest single change), then the rest, most severe first.

Kinds: ``throughput_change``, ``setup_change``, ``comm_time_change``, ``dominant_change``
(compare); ``scaling_efficiency``, ``negative_scaling``, ``scaling_incomplete`` (scaling).

A job figure that is a time (the step time, ``step_time_s``: Megatron's ``elapsed time per
iteration``) is better lower: "the step time rose" is the job getting slower, and a step
time is never called a throughput. A step time says nothing of the work a step does, so
where the global batch per step differs between runs their step times are not compared as
faster or slower.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from ..analysis import compare as cmp_analysis
from ..analysis.scaling import lower_is_better
from ..analysis.scaling import unit as _metric_unit
from ..schema import SEVERITIES
from . import Evidence, Finding, ev, frame
from . import thresholds as th

#: the kinds of this module, in the order they are listed within a severity
KINDS = ("throughput_change", "setup_change", "dominant_change", "comm_time_change",
         "negative_scaling", "scaling_efficiency", "scaling_incomplete")


def _n(v: float, unit: str = "") -> str:
    a = abs(v)
    text = f"{v:,.0f}" if a >= 100 else f"{v:,.1f}" if a >= 10 else f"{v:,.2f}" \
        if a >= 0.1 else f"{v:.3g}"
    return f"{text} {unit}".strip() if unit else text


def _s(v: float) -> str:
    return f"{v:.3g} s" if abs(v) < 0.1 else f"{v:,.2f} s"


def _unit(metric: str) -> str:
    """``images_per_s`` -> ``images/s``; ``step_time_s`` -> ``s``."""
    return _metric_unit(metric)


def _factor(b: float, c: float) -> str:
    if b > 0 and c / b >= 1.5:
        return f"{c / b:.1f}x"
    return f"{(c - b) / b * 100:+.0f}%" if b else "from 0"


def _ev(table: str, key: str, metric: str) -> Evidence:
    return ev("compare.compare", table=table, key=key, metric=metric)


def ordered(findings: list[Finding]) -> pd.DataFrame:
    """The findings table of a comparison: most severe first, then in :data:`KINDS` order."""
    df = frame(findings)
    if len(df):
        sev = df["severity"].astype(object).map({s: i for i, s in enumerate(SEVERITIES)})
        place = df["kind"].astype(object).map({k: i for i, k in enumerate(KINDS)})
        df = df.loc[pd.DataFrame({"s": sev, "p": place}).sort_values(
            ["s", "p"], kind="stable").index].reset_index(drop=True)
    return df


# ---- compare --------------------------------------------------------------------------------

def throughput_change(cmp: pd.DataFrame, base: str, cand: str, *,
                      drop_pct: float = th.THROUGHPUT_CHANGE_PCT,
                      batches: tuple[float | None, float | None] = (None, None),
                      ) -> list[Finding]:
    """The job figure from base to candidate, per metric: a warning when the job got slower
    by more than ``drop_pct`` percent (a rate fell, or a step time rose), else info.

    A step time is a time, better lower ("the step time rose 7.5%"). ``batches``: the global
    batch per step of base and candidate where known; when both are known and differ, a
    step of one run does other work than a step of the other, so their step times are
    reported as info (the rate, global batch / step time, says which is faster). Where the
    runs also have a rate, the rate comes first and only it can be a warning."""
    out = []
    job = _job_rows(cmp)
    times = job["metric"].astype(str).map(lower_is_better).astype(bool)
    has_rate = bool((~times).any())
    for r in pd.concat([job[~times], job[times]]).itertuples(index=False):
        pct = r.change_pct
        metric = str(r.metric)
        time = lower_is_better(metric)
        slower_pct = -pct if time else pct   # negative: the job got slower
        how = f" {abs(pct):.1f}%" if not math.isnan(pct) and r.change else ""
        nums = f"{_n(r.base)} -> {_n(r.candidate, _unit(metric))}"
        if time:
            verb = "rose" if r.change > 0 else "fell" if r.change < 0 else "stayed the same"
            speed = (" (slower)" if r.change > 0 else " (faster)" if r.change < 0 else "")
            msg = f"The step time {verb}{how} from {base} to {cand}: {nums}{speed}."
        else:
            verb = "fell" if r.change < 0 else "rose" if r.change > 0 else "stayed the same"
            msg = f"The job throughput {verb}{how} from {base} to {cand}: {nums}."
        other_work = time and all(b is not None for b in batches) and batches[0] != batches[1]
        if other_work:
            msg = (msg[:-len(speed) - 1] + "." if speed else msg) + (
                f" The global batch per step changed ({_n(float(batches[0] or 0))} -> "
                f"{_n(float(batches[1] or 0))}): a step does other work, so the step time "
                "does not say which run is faster; the rate (global batch / step time) does.")
        # a step time beside a rate of the same runs says the same thing: the rate warns
        if time and not other_work and (batches[0] is None) != (batches[1] is None):
            lost = base if batches[0] is None else cand
            msg += (f" ({lost} does not print its global batch per step: that a step does "
                    "the same work in both runs is assumed.)")
        fell = not other_work and not (time and has_rate) and not math.isnan(slower_pct) \
            and slower_pct <= -drop_pct
        out.append(Finding(
            "warning" if fell else "info", "throughput_change", "job", f"{base} -> {cand}",
            msg, _ev(r.table, r.key, r.metric),
            hint="the findings below say where the time went" if fell else "",
            value=pct if not math.isnan(pct) else None,
            threshold=drop_pct if time else -drop_pct))
    return out


def setup_change(setup: pd.DataFrame | None, cmp: pd.DataFrame, base: str, cand: str, *,
                 change_pct: float = th.THROUGHPUT_CHANGE_PCT) -> list[Finding]:
    """The network between nodes changed (NCCL's network, the channels' transports,
    GPUDirect RDMA, the net plugin or provider: the settings the formats declare as the
    network, :func:`dptrace.analysis.compare.network_settings`) and the job
    throughput changed by more than ``change_pct`` percent: both, with their numbers and
    the direction; a warning when the job got slower, else info. When a run has no job
    figure, the network change alone is info (the throughput cannot say what it cost)."""
    if setup is None or setup.empty:
        return []
    changes = cmp_analysis.setup_changes(setup, cmp_analysis.network_settings())
    if not changes:
        return []
    what = "; ".join(f"{k}: {b} -> {c}" for k, b, c in changes)
    where = tuple(ev("setup.setup", setting=k) for k, _, _ in changes[:1])
    job = _job_rows(cmp)
    if job.empty:
        return [Finding(
            "info", "setup_change", "job", f"{base} -> {cand}",
            f"The network path between nodes changed from {base} to {cand} ({what}); the job "
            "throughput is not known for both runs, so what it cost is not measured here.",
            where, hint="the setup table shows every setting of both runs")]
    rates = job[~job["metric"].astype(str).map(lower_is_better)]
    r = next((rates if len(rates) else job).itertuples(index=False))
    metric = str(r.metric)
    time = lower_is_better(metric)
    pct = float(r.change_pct)
    if math.isnan(pct) or abs(pct) <= change_pct:
        return []
    slower = pct > 0 if time else pct < 0
    figure = "the step time" if time else "the job throughput"
    verb = "rose" if pct > 0 else "fell"
    return [Finding(
        "warning" if slower else "info", "setup_change", "job", f"{base} -> {cand}",
        f"The network path between nodes changed from {base} to {cand} ({what}), and {figure} "
        f"{verb} {abs(pct):.1f}%: {_n(r.base)} -> {_n(r.candidate, _unit(metric))} "
        f"({'slower' if slower else 'faster'}).",
        (*where, _ev(r.table, r.key, r.metric)),
        hint=("a job that fell back to TCP sockets (NCCL network Socket) or lost GPUDirect "
              "RDMA moves its gradients through host memory: check the net plugin "
              "(NCCL_NET_PLUGIN, LD_LIBRARY_PATH), NCCL_NET_GDR_LEVEL and "
              "NCCL_SOCKET_IFNAME" if slower else "the setup table shows every setting"),
        value=pct, threshold=change_pct)]


def comm_time_change(cmp: pd.DataFrame, base: str, cand: str, *,
                     grow_pct: float = th.COMM_CHANGE_PCT) -> list[Finding]:
    """MPI time per rank (mpitrace) or the Horovod collective time from base to candidate,
    against the time outside it: a warning when it grew by more than ``grow_pct`` percent."""
    def row(table: str, metric: str) -> object | None:
        hit = cmp[(cmp["table"] == table) & (cmp["metric"] == metric)]
        return None if hit.empty else next(hit.itertuples(index=False))

    pairs = [(m.table, m.comm.time, m.comm.whole, m.comm.what)
             for m in cmp_analysis.comm_measures() if m.comm is not None]
    out = []
    for table, comm, whole, what in pairs:
        c, w = row(table, comm), row(table, whole)
        if c is None or math.isnan(c.base) or math.isnan(c.candidate):  # type: ignore[attr-defined]
            continue
        b, k = float(c.base), float(c.candidate)  # type: ignore[attr-defined]
        pct = (k - b) / b * 100.0 if b else math.nan
        rest = ""
        if w is not None and not (math.isnan(w.base) or math.isnan(w.candidate)):  # type: ignore[attr-defined]
            ob, oc = float(w.base) - b, float(w.candidate) - k  # type: ignore[attr-defined]
            if ob > 0 and abs(oc - ob) / ob < 0.1:
                rest = f" while the time outside it stayed at {_s(oc)} ({_s(ob)} -> {_s(oc)})"
            elif ob > 0:
                rest = (f"; the time outside it went from {_s(ob)} to {_s(oc)} "
                        f"({_factor(ob, oc)})")
        grew = not math.isnan(pct) and pct > grow_pct
        verb = "grew" if k > b else "fell" if k < b else "stayed the same"
        out.append(Finding(
            "warning" if grew else "info", "comm_time_change", "job", f"{base} -> {cand}",
            f"{what} {verb} {_factor(b, k)} from {base} to {cand} ({_s(b)} -> {_s(k)})"
            f"{rest}.", _ev(c.table, c.key, c.metric),  # type: ignore[attr-defined]
            hint="the change that dominates is listed with this finding" if grew else "",
            value=pct if not math.isnan(pct) else None, threshold=grow_pct))
    return out


def dominant_change(cmp: pd.DataFrame, top: pd.DataFrame, base: str, cand: str,
                    ) -> list[Finding]:
    """The largest single change in time (the first row of "what changed most"), with its
    share of the change in communication time."""
    if top.empty:
        return []
    r = next(top.itertuples(index=False))
    comm = {m.table: m.comm for m in cmp_analysis.comm_measures() if m.comm is not None}
    total = cmp[cmp["table"].isin(list(comm))
                & cmp["metric"].isin([c.time for c in comm.values()])]
    share = ""
    if len(total):
        t = float(total["change"].iloc[0])
        if t and (t > 0) == (r.change > 0) and abs(r.change) <= abs(t) * 1.5:
            share = f", {min(abs(r.change / t), 1.0) * 100:.0f}% of the change in " \
                    f"{comm[str(total['table'].iloc[0])].short} time"
    what = "time per rank" if r.metric == "time_s_per_rank" else "time"
    verb = "grew" if r.change > 0 else "fell"
    hint = cmp_analysis.hint(str(r.table), str(r.key))
    return [Finding(
        "warning" if r.change > 0 else "info", "dominant_change", "job", str(r.key),
        f"The largest change in time from {base} to {cand} is {r.key}: {what} {verb} by "
        f"{_s(abs(r.change))} ({_s(r.base)} -> {_s(r.candidate)}{share}).",
        _ev(r.table, r.key, r.metric), hint=hint, value=float(r.change_s), threshold=None)]


def _job_rows(cmp: pd.DataFrame) -> pd.DataFrame:
    """The compare rows of the job figure (the table of the ``job`` measure) that both runs
    have."""
    m = cmp_analysis.with_role("job")
    if m is None:
        return cmp.iloc[:0]
    return cmp[(cmp["table"] == m.table) & cmp["base"].notna() & cmp["candidate"].notna()]


def compare_findings(cmp: pd.DataFrame, top: pd.DataFrame, base: str, cand: str,
                     thresholds: Mapping[str, float] | None = None, *,
                     setup: pd.DataFrame | None = None,
                     batches: tuple[float | None, float | None] = (None, None),
                     ) -> pd.DataFrame:
    """Every compare rule; the findings table, most severe first. ``setup``: the two runs'
    setup table (:func:`dptrace.analysis.compare.setup`); ``batches``: their global batch
    per step where known."""
    t = dict(thresholds or {})
    pct = t.get("throughput_change", th.THROUGHPUT_CHANGE_PCT)
    found = [*throughput_change(cmp, base, cand, drop_pct=pct, batches=batches),
             *setup_change(setup, cmp, base, cand, change_pct=pct),
             *dominant_change(cmp, top, base, cand),
             *comm_time_change(cmp, base, cand, grow_pct=t.get(
                 "comm_time_change", th.COMM_CHANGE_PCT))]
    return ordered(found)


# ---- scaling --------------------------------------------------------------------------------

def _who(n: object, by: str) -> str:
    unit = by[:-1] if str(n) == "1" else by
    return f"{n} {unit}"


def judged(sc: pd.DataFrame) -> pd.DataFrame:
    """The rows of a scaling table the scaling rules judge: every rate, and a time (the
    step time) only of runs that have no rate (a Megatron run's samples/s is its global
    batch / step time already: judging both would say one thing twice)."""
    if sc.empty or "metric" not in sc.columns:
        return sc
    time = sc["metric"].map(lambda m: m is not None and lower_is_better(m)).astype(bool)
    with_rate = set(sc.loc[~time & sc["metric"].notna(), "run"].astype(str))
    return sc[~(time & sc["run"].astype(str).isin(with_rate))]


def scaling_efficiency(sc: pd.DataFrame, growth: pd.DataFrame | None, by: str = "ranks", *,
                       floor: float = th.SCALING_EFFICIENCY) -> list[Finding]:
    """For each metric, the largest run whose efficiency is below ``floor``: a warning that
    names the communication cost that grew most from the base run to it (``growth``: the
    per-run routine or activity times, ``key`` then one column per run). A step time's
    efficiency (only where the global batch per step is known) is said as a step time
    against its ideal: the base's step time x (B(N) / B(N0)) / (N / N0)."""
    out = []
    sc_j = judged(sc)
    rows = sc_j[sc_j["efficiency"].notna() & (sc_j["run"] != sc_j["base_run"])]
    for metric, g in rows.groupby("metric", sort=False):
        low = g[g["efficiency"] < floor]
        if low.empty:
            continue
        r = low.iloc[-1]
        base = sc[(sc["run"] == r["base_run"]) & (sc["metric"] == metric)].iloc[0]
        who = _who(r["workers"], by)
        if lower_is_better(metric):
            ideal = r["job_value"] * r["efficiency"]
            msg = (f"Efficiency at {who} is {r['efficiency'] * 100:.0f}%: a step time of "
                   f"{_n(r['job_value'], 's')} against an ideal {_n(ideal, 's')} "
                   f"({_n(base['job_value'], 's')} at {_who(base['workers'], by)} x global "
                   f"batch {_n(float(r['global_batch']))}/{_n(float(base['global_batch']))}"
                   f" / {r['ideal_speedup']:g} {by})")
        else:
            ideal = base["job_value"] * r["ideal_speedup"]
            msg = (f"Efficiency at {who} is {r['efficiency'] * 100:.0f}%: "
                   f"{_n(r['job_value'], _unit(str(metric)))} against an ideal "
                   f"{_n(ideal)} ({_n(base['job_value'])} at {_who(base['workers'], by)} x "
                   f"{r['ideal_speedup']:g})")
        grown = _grown(growth, str(r["base_run"]), str(r["run"]))
        if grown:
            msg += f"; {grown}"
        out.append(Finding(
            "warning", "scaling_efficiency", "job", f"{who}", msg + ".",
            ev("scaling.scaling", run=r['run'], metric=metric),
            hint="the per-run tables show which cost grows with the number of workers",
            value=float(r["efficiency"]) * 100, threshold=floor * 100))
    return out


def _grown(growth: pd.DataFrame | None, base: str, run: str) -> str:
    if growth is None or growth.empty or base not in growth.columns or run not in growth:
        return ""
    d = (growth[run].astype("float64") - growth[base].astype("float64"))
    if d.empty or not (d > 0).any():
        return ""
    i = d.idxmax()
    return (f"{growth.loc[i, 'key']} time per rank grew from {_s(growth.loc[i, base])} to "
            f"{_s(growth.loc[i, run])}")


def negative_scaling(sc: pd.DataFrame, by: str = "ranks") -> list[Finding]:
    """A run with more workers and a lower job rate than a smaller run. A step time is
    judged by its rate, global batch / step time, and only where both runs print their
    global batch per step: a step time that grew with the workers is not a slower job when
    each step does more work."""
    out = []
    sc = judged(sc)
    for metric, g in sc[sc["job_value"].notna() & sc["workers"].notna()].groupby(
            "metric", sort=False):
        time = lower_is_better(metric)
        if time:
            g = g[g["global_batch"].notna() & (g["job_value"] > 0)]
            g = g.assign(rate_=g["global_batch"] / g["job_value"])
        else:
            g = g.assign(rate_=g["job_value"])
        g = g.sort_values("workers", kind="stable")
        best = None
        for r in g.itertuples(index=False):
            if best is not None and r.workers > best.workers and r.rate_ < best.rate_:
                if time:
                    msg = (f"The job's rate fell from {_n(best.rate_, 'samples/s')} at "
                           f"{_who(best.workers, by)} (global batch {_n(best.global_batch)}"
                           f" in {_n(best.job_value, 's')} per step) to {_n(r.rate_)} at "
                           f"{_who(r.workers, by)} ({_n(r.global_batch)} in "
                           f"{_n(r.job_value, 's')}): adding workers made the job slower.")
                else:
                    unit = _unit(str(metric))
                    msg = (f"The job throughput fell from {_n(best.job_value, unit)} at "
                           f"{_who(best.workers, by)} to {_n(r.job_value)} at "
                           f"{_who(r.workers, by)}: adding workers made the job slower.")
                out.append(Finding(
                    "warning", "negative_scaling", "job", _who(r.workers, by), msg,
                    ev("scaling.scaling", run=r.run, metric=metric),
                    hint="communication or a shared resource (network, file system) "
                    "dominates: compare the two runs (dptrace compare)",
                    value=float(r.rate_), threshold=float(best.rate_)))
            if best is None or r.rate_ > best.rate_:
                best = r
    return out


def scaling_incomplete(sc: pd.DataFrame) -> list[Finding]:
    """A run that lacks what scaling needs (its size, a throughput figure): kept for the rest.
    A run whose only figure is a step time without its global batch per step has no
    efficiency: info, with the reason (``efficiency_note``)."""
    out = []
    for r in sc[sc["missing"].astype(str) != ""].drop_duplicates("run").itertuples(index=False):
        nothing = str(r.missing).startswith("any input")
        out.append(Finding(
            "warning" if nothing else "info", "scaling_incomplete", "input", str(r.label),
            f"Run {r.label} gave no data: nothing of its inputs was read (see Problems)."
            if nothing else f"Run {r.label} lacks {r.missing}: it is kept for what it has.",
            ev("scaling.scaling", run=r.run)))
    if "efficiency_note" not in sc.columns:
        return out
    lacking = set(sc.loc[sc["missing"].astype(str) != "", "run"].astype(str))
    for run, g in judged(sc).groupby(sc["run"].astype(str), sort=False):
        notes = g["efficiency_note"].fillna("").astype(str)
        if run in lacking or g["efficiency"].notna().any() or not (notes != "").any():
            continue
        r = g[notes != ""].iloc[0]
        out.append(Finding(
            "info", "scaling_incomplete", "input", str(r["label"]),
            f"Run {r['label']} has no efficiency: its job figure is a step time of "
            f"{_n(float(r['job_value']), 's')}, and its efficiency is "
            f"{r['efficiency_note']}.",
            ev("scaling.scaling", run=r['run'], metric=r['metric']),
            hint="a log that prints the global batch per step (Megatron's 'global batch "
            "size') or a samples/s figure gives the rate"))
    return out


def scaling_findings(sc: pd.DataFrame, growth: pd.DataFrame | None, by: str = "ranks",
                     thresholds: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Every scaling rule; the findings table, most severe first."""
    t = dict(thresholds or {})
    floor = t.get("scaling_efficiency", th.SCALING_EFFICIENCY * 100) / 100
    return ordered([*negative_scaling(sc, by), *scaling_efficiency(sc, growth, by, floor=floor),
                    *scaling_incomplete(sc)])
