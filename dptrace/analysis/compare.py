"""Two runs side by side (``dptrace compare``): every report table both runs have, row by row.

The input is the ordinary report of a Dataset that holds both runs (each table's ``run``
column tells them apart). :data:`MEASURES` says, for each report table worth comparing,
which columns identify a row across runs (a routine, a size bin, a rank; never a file name
or a job id, which differ from run to run) and which numbers are compared, how rows of one
key within a run combine (two mpitrace jobs of one run: times add up) and which numbers are
times (so that "what changed most" compares seconds with seconds).

:func:`compare` gives the ``compare`` table: ``table``, ``key``, ``metric``, ``base``,
``candidate``, ``change`` (candidate - base, in the metric's unit), ``change_pct`` (of the
base; missing where the base is 0 or missing), ``unit`` and ``change_s`` (the change in
seconds, for times) and ``better`` (``higher`` or ``lower``: which way is faster, for the job
figures: a rate is better higher, a time such as ``step_time_s`` lower; empty for the
other numbers). A key that one run has and the other lacks (a routine only the
candidate calls) counts as 0 in the other for additive numbers (times, calls, bytes), and as
missing for the others (shares, rates). Rows are in :data:`MEASURES` order and, within a
table, largest relative change first. :func:`largest_changes` keeps the ten largest
changes in time. :func:`findings` says what changed, in plain words.

:func:`wide` lays one metric of a table out with one column per run (the scaling report's
per-run tables).

:func:`setup` says what changed in the setup: one row per setting (world size, nodes,
launcher, global batch per step, NCCL version, network, plugin and provider, transports,
GPUDirect RDMA, every ``NCCL_*`` / ``HOROVOD_*`` variable the logs state), one column per
run, ``changed`` where two runs state different values.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..reports.fmt import bin_label
from .keys import plain
from .scaling import better as _better
from .scaling import unit as _job_unit

#: the compare table's columns
COLUMNS = ["table", "key", "metric", "base", "candidate", "change", "change_pct", "unit",
           "change_s", "better"]
#: rows of "what changed most"
TOP = 10


@dataclass(frozen=True)
class Metric:
    """One compared number of a table."""

    #: its column in the report table
    column: str
    #: how rows of one key within one run combine: ``sum`` (additive: times, calls, bytes),
    #: ``mean``, ``max`` or ``first``
    agg: str = "sum"
    #: its unit as shown
    unit: str = ""
    #: the factor to seconds when it is an additive time (None: not a time)
    seconds: float | None = None


@dataclass(frozen=True)
class Measure:
    """A report table compared across runs."""

    #: ``"<section>.<table>"`` of the report
    table: str
    #: the columns that identify a row across runs
    keys: tuple[str, ...]
    metrics: tuple[Metric, ...]
    #: the key as a reader says it, from the key values (``"MPI_Allreduce 4-8 MiB"``)
    label: Callable[[Mapping[str, object]], str]
    #: a key column whose value names the metric instead of the column (job figures:
    #: ``images_per_s``), or None
    metric_key: str | None = None
    #: rows kept (None: all)
    where: Callable[[pd.DataFrame], pd.Series] | None = None


def _bin(k: Mapping[str, object]) -> str:
    """``MPI_Allreduce 4-8 MiB``: a routine's power-of-two size bin as a range of sizes."""
    try:
        return f"{k['routine']} {bin_label(int(k['bin']), int(k['bin_hi_bytes']))}"  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return f"{k['routine']} bin {k['bin']}"


def _per_instance(df: pd.DataFrame) -> pd.Series:
    """Training rows of per-instance series (a printed global figure is the job's row)."""
    keep = pd.Series(True, index=df.index)
    if "phase" in df.columns:
        phase = df["phase"].astype(object)
        keep &= phase.isna() | (phase == "train")
    if "scope" in df.columns:
        keep &= df["scope"].astype(object) != "global"
    return keep


def _series(k: Mapping[str, object]) -> str:
    """``img/sec per CPU, instance 3``: a throughput series' printed name and the instance."""
    name = next((str(v) for v in (k.get("name"), k.get("label")) if _text(v)), "")
    return f"{name}, instance {k['instance']}" if name else f"instance {k['instance']}"


def _text(v: object) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v)) and v is not pd.NA \
        and str(v) != ""


S = 1.0
US = 1e-6
MEASURES: tuple[Measure, ...] = (
    Measure("throughput.job", ("metric",), (Metric("value", "first", "/s"),),
            lambda k: "job throughput", metric_key="metric"),
    Measure("communication.jobs", (), (
        Metric("elapsed_max_s", "max", "s", None), Metric("comm_mean_s", "sum", "s", S),
        Metric("comm_max_s", "max", "s"), Metric("comm_share_mean", "mean", "share"),
        Metric("comm_imbalance", "max", "x")), lambda k: "MPI per rank"),
    Measure("message_sizes.bins", ("routine", "bin", "bin_hi_bytes"), (
        Metric("time_s_per_rank", "sum", "s", S), Metric("calls_per_rank", "sum", "calls"),
        Metric("busbw_bytes_per_s", "mean", "B/s")), _bin),
    Measure("communication.routines", ("routine",), (
        Metric("time_s_per_rank", "sum", "s", S), Metric("calls_per_rank", "sum", "calls"),
        Metric("bytes_per_rank", "sum", "B"), Metric("time_share", "mean", "share")),
        lambda k: str(k["routine"])),
    Measure("communication.ranks", ("rank",), (
        Metric("comm_time_s", "sum", "s", S), Metric("elapsed_s", "max", "s"),
        Metric("comm_share", "mean", "share")), lambda k: f"rank {k['rank']}"),
    Measure("throughput.instances", ("metric", "name", "label", "instance"),
            (Metric("value", "first", "/s"),), _series, metric_key="metric",
            where=_per_instance),
    Measure("horovod.time", (), (
        Metric("span_us", "max", "s"), Metric("negotiate_wall_us", "sum", "s", US),
        Metric("op_wall_us", "sum", "s", US), Metric("negotiate_share", "mean", "share"),
        Metric("op_share", "mean", "share"), Metric("idle_share", "mean", "share")),
        lambda k: "Horovod timeline"),
    Measure("horovod.activities", ("level", "op", "activity"), (
        Metric("wall_us", "sum", "s", US), Metric("intervals", "sum", "intervals")),
        lambda k: f"{k['op']} (whole op)" if k["level"] == "op"
        else f"{k['op']} {k['activity']}"),
    Measure("horovod.stragglers", ("rank",), (
        Metric("last_share", "mean", "share"), Metric("mean_lag_us", "mean", "us")),
        lambda k: f"rank {k['rank']} negotiations"),
    Measure("horovod.fusion", ("op",), (
        Metric("tensors_per_op", "mean", "tensors"), Metric("mean_bytes", "mean", "B")),
        lambda k: f"{k['op']} fusion"),
    Measure("horovod.top_tensors", ("tensor",), (
        Metric("total_us", "sum", "s", US), Metric("bytes", "max", "B")),
        lambda k: f"tensor {k['tensor']}"),
    Measure("tiles.overview", (), (
        Metric("exec_mean_pct", "mean", "%"), Metric("load_overhead_pct", "mean", "%"),
        Metric("idle_tiles", "sum", "tiles")), lambda k: "tiles"),
)
#: the tables whose time changes are the most specific, in the order the dominant change is
#: looked for (a size bin says more than its routine, a routine more than a rank)
SPECIFIC = ("message_sizes.bins", "horovod.activities", "communication.routines",
            "communication.ranks")
#: the tables of "what changed most": per source, the most specific one the runs have
_FAMILIES = (("message_sizes.bins", "communication.routines"),
             ("horovod.activities", "horovod.time"))
#: the unit factor of times shown in seconds (``span_us`` is shown in s)
_TO_UNIT = {"span_us": US, "negotiate_wall_us": US, "op_wall_us": US, "wall_us": US,
            "total_us": US}


def measure(table: str) -> Measure | None:
    return next((m for m in MEASURES if m.table == table), None)


def values(df: pd.DataFrame, m: Measure, run: str) -> pd.DataFrame | None:
    """The rows of run ``run`` in table ``df``, one per key, the metrics combined by their
    ``agg``; None when the run has no row in it. Index: the key label; columns: ``_metric``
    (the metric name for ``metric_key`` tables) and the metric columns."""
    if df is None or df.empty:
        return None
    rows = df[(plain(df["run"]).astype(str) == run).to_numpy()] if "run" in df.columns else df
    if m.where is not None and len(rows):
        rows = rows[m.where(rows).to_numpy()]
    if rows.empty:
        return None
    cols = [c for c in (x.column for x in m.metrics) if c in rows.columns]
    keys = [k for k in m.keys if k in rows.columns]
    if len(keys) != len(m.keys):
        return None
    data = rows[keys + cols].copy()
    for k in keys:
        data[k] = plain(data[k])
    for c in cols:
        data[c] = pd.to_numeric(data[c], errors="coerce").astype("float64")
    aggs = {x.column: x.agg for x in m.metrics if x.column in cols}
    if keys:
        out = data.groupby(keys, sort=False, dropna=False, observed=True).agg(aggs)
        out = out.reset_index()
    else:
        out = pd.DataFrame([{c: getattr(data[c], a)() if a != "first" else data[c].iloc[0]
                             for c, a in aggs.items()}])
    out.index = pd.Index([m.label(r) for r in out[keys].to_dict("records")] if keys
                         else [m.label({})])
    out["_metric"] = out[m.metric_key].astype(str) if m.metric_key else ""
    return out


def _unit_value(metric: Metric, v: float) -> float:
    return v * _TO_UNIT.get(metric.column, 1.0)


def compare(tables: Mapping[str, pd.DataFrame], base: str, candidate: str) -> pd.DataFrame:
    """The ``compare`` table of runs ``base`` and ``candidate`` (run ids) from the report
    ``tables`` of a Dataset that holds both (see the module text)."""
    rows: list[dict[str, object]] = []
    for m in MEASURES:
        df = tables.get(m.table)
        vb, vc = values(df, m, base), values(df, m, candidate)
        if vb is None or vc is None:
            continue   # only tables where both runs have data
        mine: list[dict[str, object]] = []
        index = list(dict.fromkeys([*zip(vb.index, vb["_metric"], strict=True),
                                    *zip(vc.index, vc["_metric"], strict=True)]))
        for key, mk in index:
            b_row = _row(vb, key, mk)
            c_row = _row(vc, key, mk)
            for x in m.metrics:
                if x.column not in vb.columns and x.column not in vc.columns:
                    continue
                b = _get(b_row, x)
                c = _get(c_row, x)
                if (math.isnan(b) or b == 0) and (math.isnan(c) or c == 0):
                    continue   # nothing in either run
                b, c = _unit_value(x, b), _unit_value(x, c)
                change = c - b
                pct = change / abs(b) * 100.0 if b and not math.isnan(b) else math.nan
                job = m.metric_key == "metric"   # job figures and throughput series
                mine.append({"table": m.table, "key": str(key),
                             "metric": mk if m.metric_key else x.column,
                             "base": b, "candidate": c, "change": change, "change_pct": pct,
                             "unit": _job_unit(mk) if job else x.unit,
                             "change_s": change if x.seconds is not None else math.nan,
                             "better": _better(mk) if job else ""})
        mine.sort(key=lambda r: (_nan_last(r["change_pct"]), -_abs(r["change"])))
        rows.extend(mine)
    out = pd.DataFrame(rows, columns=COLUMNS)
    for col in ("base", "candidate", "change", "change_pct", "change_s"):
        out[col] = out[col].astype("float64")
    return out


def _row(v: pd.DataFrame, key: object, mk: str) -> pd.Series | None:
    hit = v[(v.index == key) & (v["_metric"] == mk)]
    return None if hit.empty else hit.iloc[0]


def _get(row: pd.Series | None, x: Metric) -> float:
    """A metric of a row; a key the run lacks is 0 for additive numbers, else missing."""
    if row is None:
        return 0.0 if x.agg == "sum" else math.nan
    v = row.get(x.column, math.nan)
    return float(v) if v is not None and not pd.isna(v) else math.nan


def _abs(v: object) -> float:
    f = float(v)  # type: ignore[arg-type]
    return 0.0 if math.isnan(f) else abs(f)


def _nan_last(pct: object) -> tuple[int, float]:
    f = float(pct)  # type: ignore[arg-type]
    return (1, 0.0) if math.isnan(f) else (0, -abs(f))


def largest_changes(table: pd.DataFrame, n: int = TOP) -> pd.DataFrame:
    """The ``n`` largest changes in time (seconds) of a ``compare`` table, largest first.

    Only the most specific tables of each source count, so that no time is counted twice
    (an Allreduce size bin's time is also its routine's, its ranks' and the job's): MPI
    size bins (else routines) and Horovod activities (negotiation and the activities inside
    an op, not the op's whole interval; else the timeline's totals)."""
    have = set(table["table"])
    keep = [next(t for t in family if t in have) for family in _FAMILIES
            if any(t in have for t in family)]
    table = table[table["table"].isin(keep)]
    # a Horovod op's whole interval holds its activities: the activities are the detail
    table = table[~((table["table"] == "horovod.activities")
                    & table["key"].astype(str).str.endswith(" (whole op)"))]
    times = table[table["change_s"].notna() & (table["change_s"] != 0)]
    order = times["change_s"].abs().sort_values(ascending=False, kind="stable").index
    return times.loc[order[:n]].reset_index(drop=True)


def wide(tables: Mapping[str, pd.DataFrame], table: str, column: str,
         runs: Sequence[str], names: Sequence[str] | None = None) -> pd.DataFrame:
    """One metric of a report table with one column per run (``names``, default the run
    ids): ``key``, then the runs' values; keys a run lacks are 0 for additive numbers. Empty
    when no run has the table."""
    m = measure(table)
    if m is None:
        raise KeyError(f"no measure for table {table!r}")
    metric = next(x for x in m.metrics if x.column == column)
    names = list(names or runs)
    per = {name: values(tables.get(table), m, r)
           for r, name in zip(runs, names, strict=True)}
    if all(v is None for v in per.values()):
        return pd.DataFrame(columns=["key", *names])
    keys = list(dict.fromkeys(k for v in per.values() if v is not None for k in v.index))
    out = pd.DataFrame({"key": keys})
    for name, v in per.items():
        if v is None or column not in v.columns:
            out[name] = np.nan
            continue
        got = v[column].groupby(level=0, sort=False).first()
        col = out["key"].map(got).astype("float64") * _TO_UNIT.get(column, 1.0)
        out[name] = col.fillna(0.0) if metric.agg == "sum" else col
    return out


#: the setup's rows that are the job's layout, before NCCL's (:data:`nccl.SETTING_ROWS`)
JOB_ROWS = ("world size", "nodes", "launcher", "global batch per step")


def setup(runs: pd.DataFrame, nccl_settings: pd.DataFrame | None,
          batches: Mapping[str, tuple[float | None, str]] | None, order: Sequence[str],
          names: Sequence[str] | None = None) -> pd.DataFrame:
    """What each run's setup is, side by side: ``setting``, one column per run (``names``,
    default the run ids; text, None where the run's inputs do not say it) and ``changed``
    (True when two runs state different values; a setting one run states and another does
    not is not a change, except an ``NCCL_*`` / ``HOROVOD_*`` variable that a run with NCCL
    lines does not state: ``not stated`` there, since NCCL prints each variable it reads).

    ``runs``: the runs table (world size, nodes, launcher); ``nccl_settings``: the long
    table of :func:`dptrace.analysis.nccl.settings`; ``batches``: the global batch per step
    (:func:`dptrace.analysis.scaling.global_batch`). Rows: :data:`JOB_ROWS`, then NCCL's, then
    the variables by name; a row no run states is left out."""
    names = list(names or order)
    info = {str(r["run"]): r for r in runs.to_dict("records")} if len(runs) else {}
    values: dict[str, dict[str, str | None]] = {}

    def put(setting: str, run: str, v: object) -> None:
        values.setdefault(setting, {})[run] = None if _none(v) else _text_of(v)

    for run in order:
        r = info.get(run, {})
        put("world size", run, r.get("world_size"))
        put("nodes", run, r.get("nodes"))
        put("launcher", run, r.get("launcher"))
        b = (batches or {}).get(run)
        put("global batch per step", run,
            None if b is None else b[0] if b[0] is not None else f"varies ({b[1]})")
    if nccl_settings is not None and len(nccl_settings):
        for row in nccl_settings.itertuples(index=False):
            if str(row.run) in order:
                put(str(row.setting), str(row.run), row.value)
    out = []
    for setting, per in values.items():
        cells = [per.get(r) for r in order]
        if all(c is None for c in cells):
            continue
        stated = {c for c in cells if c is not None}
        out.append({"setting": setting, **dict(zip(names, cells, strict=True)),
                    "changed": len(stated) > 1})
    return pd.DataFrame(out, columns=["setting", *names, "changed"])


def _none(v: object) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _text_of(v: object) -> str:
    """A setting as text: whole numbers without ``.0``."""
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return f"{float(v):g}" if float(v) != int(v) else str(int(v))
    return str(v)


def setup_changes(table: pd.DataFrame, settings: Sequence[str]) -> list[tuple[str, str, str]]:
    """(setting, base value, candidate value) of the ``settings`` a two-run :func:`setup`
    table marks changed, in the table's order (values ``-`` where a run does not say)."""
    if table.empty or len(table.columns) != 4:
        return []
    b, c = table.columns[1], table.columns[2]
    out = []
    for r in table[table["changed"].astype(bool)].to_dict("records"):
        if r["setting"] in settings:
            out.append((str(r["setting"]), "-" if r[b] is None else str(r[b]),
                        "-" if r[c] is None else str(r[c])))
    return out
