"""Runs at several sizes (``dptrace scaling``): speedup and efficiency, and what grows with N.

The input is the ordinary report of a Dataset with one run per size (each table's ``run``
column tells them apart) and its ``runs`` table. For every run:

- **workers**: ``--by ranks`` (the default) takes ``runs.world_size`` (where the job says
  it: mpitrace, timelines, the log; see :mod:`dptrace.runs`), ``--by nodes`` takes
  ``runs.nodes``, ``--by instances`` counts the instances of the run's throughput series
  (SambaFlow instances, printing ranks). A run label that is a number (``8=path``) states
  the workers where the data does not; where both do and disagree the data is used and
  the ``note`` says so.
- **the job throughput** per metric: the job figure (the table of the measure whose role is
  ``job``, :mod:`.compare`: the training logs' and MLPerf logs' ``throughput.job``).
- **speedup and efficiency** against the run with the fewest workers that has the same
  metric (``base_run``). A rate (``better`` = ``higher``: samples, images, tokens per
  second) gives ``speedup = R(N) / R(N0)``; a time (``better`` = ``lower``: the step time
  ``step_time_s``, Megatron's ``elapsed time per iteration``) gives ``speedup = T(N0) /
  T(N)``: a step time that grew is a speedup below 1, never above. ``ideal = N / N0`` and
  ``efficiency = speedup / ideal`` for a rate. A step time is not a rate: how much work a
  step does is not in it, so its efficiency needs the global batch per step of both runs
  (``global_batch``: Megatron's ``global batch size`` of each iteration line, declared by
  the training-log format, :func:`dptrace.analysis.compare.batches`): the rate is then
  ``global batch / T`` and ``efficiency = (B(N) / T(N)) / (B(N0) / T(N0)) / ideal``;
  without it the efficiency is not computed and
  ``efficiency_note`` says why. For weak scaling (the default: the work per worker is
  fixed) the ideal is a rate that grows with N (a step time that stays the same when the
  global batch grows with N); for strong scaling (``--strong``: the global batch is fixed)
  the same formulas hold, so efficiency 1 means the job's rate grew with the workers in
  both cases, and the ``mode`` column says which reading applies. Runs whose metrics
  differ (samples vs tokens) are never divided into each other.
- **communication**: from the first compared table that declares a run's communication
  time (:class:`~.compare.Comm`): MPI time per rank and its share of the elapsed time
  (mpitrace: the mean over the ranks), else the Horovod timeline's collective-op wall time
  and share; ``comm_from`` says which.

``missing`` says what a run lacks (no throughput figure, no world size, the base run's
metric), so a run is kept for what it has.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import pandas as pd

from .keys import plain

#: the scaling table's columns
COLUMNS = ["run", "label", "workers", "workers_from", "metric", "job_value", "unit", "better",
           "global_batch", "base_run", "speedup", "ideal_speedup", "efficiency",
           "efficiency_note", "mode", "elapsed_s", "comm_time_s", "comm_share", "comm_from",
           "missing", "note"]
#: what workers can be counted by
BY = ("ranks", "nodes", "instances")
_NUMBER = re.compile(r"^\s*(\d+)\s*(?:ranks?|gpus?|nodes?|workers?|instances?|n)?\s*$", re.I)


def lower_is_better(metric: object) -> bool:
    """A job figure that is a time (``step_time_s``; any ``*_s``, ``*_ms``, ``*_us`` that is
    not a rate ``*_per_s``): less is faster."""
    m = str(metric)
    return not m.endswith("_per_s") and m.endswith(("_s", "_ms", "_us"))


def better(metric: object) -> str:
    """``lower`` for a time, ``higher`` for a rate."""
    return "lower" if lower_is_better(metric) else "higher"


def unit(metric: object) -> str:
    """The unit of a job figure as shown: ``s`` (``step_time_s``), ``samples/s``."""
    m = str(metric)
    if lower_is_better(m):
        return m.rsplit("_", 1)[-1]
    return m.replace("_per_s", "/s").replace("_", " ")


def stated_workers(label: object) -> int | None:
    """The workers a run label states (``8``, ``8 ranks``, ``16gpus``), else None."""
    m = _NUMBER.match(str(label)) if label is not None else None
    if not m:
        return None
    n = int(m.group(1))
    return n if n > 0 else None


def _runs_rows(runs: pd.DataFrame) -> list[dict[str, object]]:
    return [{k: (None if _missing(v) else v) for k, v in r.items()}
            for r in runs.to_dict("records")]


def _missing(v: object) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _instances(tables: Mapping[str, pd.DataFrame], run: str) -> int | None:
    """The instances of the run's per-instance series (the ``instances`` measure's rows it
    keeps: training series, not a printed global figure)."""
    from .compare import with_role

    m = with_role("instances")
    inst = tables.get(m.table) if m is not None else None
    if m is None or inst is None or inst.empty or "instance" not in inst.columns:
        return None
    rows = inst[(plain(inst["run"]).astype(str) == run).to_numpy()]
    if m.where is not None and len(rows):
        rows = rows[m.where(rows).to_numpy()]
    n = rows["instance"].astype(object).nunique() if len(rows) else 0
    return int(n) or None


def workers(tables: Mapping[str, pd.DataFrame], runs: pd.DataFrame,
            by: str = "ranks") -> pd.DataFrame:
    """``run``, ``label``, ``workers``, ``workers_from``, ``note`` for every run."""
    if by not in BY:
        raise ValueError(f"--by {by!r}: one of {', '.join(BY)}")
    out = []
    for r in _runs_rows(runs):
        run, label = str(r["run"]), str(r.get("label") or r["run"])
        if by == "ranks":
            data, why = r.get("world_size"), f"world size ({r.get('world_size_from') or 'data'})"
        elif by == "nodes":
            data, why = r.get("nodes"), "nodes (hosts in the data)"
        else:
            data, why = _instances(tables, run), "throughput instances"
        given = stated_workers(label)
        note = ""
        if data is not None and not _missing(data):
            n: int | None = int(data)  # type: ignore[call-overload]
            if given is not None and given != n:
                note = (f"the label says {given}, the data {n} {by}: the data is used "
                        f"(--by {by})")
        elif given is not None:
            n, why = given, "the run's label"
        else:
            n, why = None, ""
        out.append({"run": run, "label": label, "workers": n, "workers_from": why,
                    "note": note})
    return pd.DataFrame(out, columns=["run", "label", "workers", "workers_from", "note"])


def _job_values(tables: Mapping[str, pd.DataFrame], run: str) -> dict[str, float]:
    """The run's job figure per metric (the ``job`` measure's first row of each metric: the
    headline)."""
    from .compare import with_role

    m = with_role("job")
    job = tables.get(m.table) if m is not None else None
    if m is None or job is None or job.empty or m.metric_key is None:
        return {}
    column = m.metrics[0].column
    rows = job[(plain(job["run"]).astype(str) == run).to_numpy()]
    out: dict[str, float] = {}
    for metric, value in zip(plain(rows[m.metric_key]).astype(str), rows[column], strict=True):
        if metric not in out and not _missing(value):
            out[metric] = float(value)
    return out


def communication(tables: Mapping[str, pd.DataFrame], run: str,
                  ) -> tuple[float, float, float, str]:
    """(elapsed s, communication s per rank, share, from) of a run, from the first measure
    with a :class:`~.compare.Comm` whose table has the run's rows; NaN where unknown."""
    from .compare import comm_measures

    for m in comm_measures():
        c = m.comm
        df = tables.get(m.table)
        if c is None or df is None or df.empty:
            continue
        rows = df[(plain(df["run"]).astype(str) == run).to_numpy()]
        if not len(rows):
            continue
        by = {x.column: x for x in m.metrics}
        whole, time = by[c.whole], by[c.time]
        return (float(rows[c.whole].astype("float64").max()) * whole.to_unit,
                float(rows[c.time].astype("float64").sum()) * time.to_unit,
                float(rows[c.share].astype("float64").mean()), c.source)
    return math.nan, math.nan, math.nan, ""


def scaling(tables: Mapping[str, pd.DataFrame], runs: pd.DataFrame, *, by: str = "ranks",
            strong: bool = False,
            batches: Mapping[str, tuple[float | None, str]] | None = None) -> pd.DataFrame:
    """The ``scaling`` table: one row per run and metric, runs by workers (see above).
    ``batches``: per run, the global batch per step and why not
    (:func:`dptrace.analysis.compare.batches`), which an efficiency from a step time needs."""
    w = workers(tables, runs, by)
    mode = "strong" if strong else "weak"
    batches = dict(batches or {})
    rows: list[dict[str, object]] = []
    vals = {r: _job_values(tables, r) for r in w["run"]}
    order = sorted(range(len(w)), key=lambda i: (w["workers"].iloc[i] is None
                                                 or _missing(w["workers"].iloc[i]),
                                                 w["workers"].iloc[i] or 0, i))
    metrics_seen = list(dict.fromkeys(m for r in w["run"] for m in vals[r]))
    base: dict[str, tuple[str, int, float]] = {}
    for i in order:
        run, n = str(w["run"].iloc[i]), w["workers"].iloc[i]
        for m, v in vals[run].items():
            if m not in base and n is not None and not _missing(n) and v > 0:
                base[m] = (run, int(n), v)
    for i in order:
        r = w.iloc[i]
        run, n = str(r["run"]), (None if _missing(r["workers"]) else int(r["workers"]))
        elapsed, comm_s, share, comm_from = communication(tables, run)
        gb = batches.get(run, (None, ""))[0]
        common = {"run": run, "label": r["label"], "workers": n,
                  "workers_from": r["workers_from"], "global_batch": gb, "mode": mode,
                  "elapsed_s": elapsed, "comm_time_s": comm_s, "comm_share": share,
                  "comm_from": comm_from, "note": r["note"]}
        lacks = []
        if n is None:
            lacks.append(f"the number of {by}: the data does not say it; state it in the "
                         f"run's label ({_hint(by)})")
        if not vals[run]:
            lacks.append("a throughput figure")
            rows.append({**common, "metric": None, "job_value": math.nan, "unit": None,
                         "better": None, "base_run": None, "speedup": math.nan,
                         "ideal_speedup": math.nan, "efficiency": math.nan,
                         "efficiency_note": "", "missing": "; ".join(lacks)})
            continue
        for m in metrics_seen:
            if m not in vals[run]:
                continue
            v = vals[run][m]
            b = base.get(m)
            mine = list(lacks)
            why = ""
            if b is None or n is None:
                speed = ideal = eff = math.nan
                if b is None and n is not None:
                    mine.append(f"a run with a known size and {m}")
            else:
                ideal = n / b[1]
                if lower_is_better(m):
                    speed = b[2] / v if v > 0 else math.nan
                    eff, why = _time_efficiency(speed, ideal, run, b[0], batches)
                else:
                    speed = v / b[2]
                    eff = speed / ideal
            rows.append({**common, "metric": m, "job_value": v, "unit": unit(m),
                         "better": better(m), "base_run": b[0] if b else None,
                         "speedup": speed, "ideal_speedup": ideal, "efficiency": eff,
                         "efficiency_note": why, "missing": "; ".join(mine)})
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["workers"] = out["workers"].astype("Int64")
    for c in ("job_value", "global_batch", "speedup", "ideal_speedup", "efficiency",
              "elapsed_s", "comm_time_s", "comm_share"):
        out[c] = out[c].astype("float64")
    return out


def _time_efficiency(speed: float, ideal: float, run: str, base: str,
                     batches: Mapping[str, tuple[float | None, str]]) -> tuple[float, str]:
    """The efficiency of a step time: the rate B/T of ``run`` over the base run's, over the
    ideal; NaN and why when a global batch per step is not known."""
    if run == base:
        b = batches.get(run, (None, ""))
        return (1.0, "") if b[0] else (math.nan, _no_batch(run, b[1]))
    gb, gb0 = batches.get(run, (None, "")), batches.get(base, (None, ""))
    for r, got in ((base, gb0), (run, gb)):
        if not got[0]:
            return math.nan, _no_batch(r, got[1])
    assert gb[0] and gb0[0]
    return speed * (gb[0] / gb0[0]) / ideal, ""


def _no_batch(run: str, why: str) -> str:
    return ("not computed: a step time is not a rate, and "
            + (f"{why} in run {run}" if why else
               f"run {run} does not print its global batch per step")
            + " (the work a step does)")


def _hint(by: str) -> str:
    return {"ranks": "e.g. 8=path for 8 ranks", "nodes": "e.g. 2=path for 2 nodes",
            "instances": "e.g. 4=path for 4 instances"}[by]


def run_order(table: pd.DataFrame, runs: Sequence[str]) -> list[str]:
    """The runs in the scaling table's order (fewest workers first), then any others."""
    seen = list(dict.fromkeys(str(r) for r in table["run"]))
    return seen + [r for r in runs if r not in seen]
