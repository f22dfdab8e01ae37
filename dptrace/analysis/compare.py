"""Two runs side by side (``dptrace compare``): every report table both runs have, row by row.

The input is the ordinary report of a Dataset that holds both runs (each table's ``run``
column tells them apart). :func:`measures` says, for each report table worth comparing (each
format declares its own: :func:`register_measures`), which columns identify a row across
runs (a routine, a size bin, a rank; never a file name or a job id, which differ from run to
run) and which numbers are compared, how rows of one key within a run combine (two mpitrace
jobs of one run: times add up) and which numbers are times (so that "what changed most"
compares seconds with seconds).

:func:`compare` gives the ``compare`` table: ``table``, ``key``, ``metric``, ``base``,
``candidate``, ``change`` (candidate - base, in the metric's unit), ``change_pct`` (of the
base; missing where the base is 0 or missing), ``unit`` and ``change_s`` (the change in
seconds, for times) and ``better`` (``higher`` or ``lower``: which way is faster, for the
job figures: a rate is better higher, a time such as ``step_time_s`` lower; empty for the
other numbers). A key that one run has and the other lacks (a routine only the candidate
calls) counts as 0 in the other for additive numbers (times, calls, bytes), and as missing
for the others (shares, rates). Rows are in :func:`measures` order and, within a table,
largest relative change first. :func:`largest_changes` keeps the ten largest changes in
time. :func:`findings` says what changed, in plain words.

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
    #: the factor from the column's unit to the unit shown (``span_us`` shown in s: 1e-6)
    to_unit: float = 1.0


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
    #: its place in the compare table (lower first)
    order: int = 1000
    #: tables that count one source's time at several levels (an Allreduce size bin's time
    #: is also its routine's): "what changed most" takes, per family, the table of the
    #: lowest ``family_rank`` the runs have, so no time is counted twice
    family: str | None = None
    family_rank: int = 0
    #: keys whose rows hold the other rows' time (a Horovod op's whole interval): left out
    #: of "what changed most"
    whole: Callable[[str], bool] | None = None


S = 1.0
US = 1e-6
_MEASURES: dict[str, Measure] = {}
_FOUND = False
#: the module of a format package that declares its compared tables
FORMAT_COMPARE = "compare"


def register_measures(*measures: Measure) -> None:
    """Declare report tables compared across runs (a table declared again is replaced)."""
    for m in measures:
        _MEASURES[m.table] = m


def measures() -> list[Measure]:
    """Every compared table, in order: the formats' ``compare`` modules
    (``dptrace/formats/<format>/compare.py``, or a plug-in's) are imported on first use."""
    global _FOUND
    if not _FOUND:
        _FOUND = True
        from .. import formats  # the index of formats: discovery, no format's code

        formats.import_parts(FORMAT_COMPARE)
    return sorted(_MEASURES.values(), key=lambda m: m.order)


def measure(table: str) -> Measure | None:
    """The measure of report table ``table``, or None."""
    return next((m for m in measures() if m.table == table), None)


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
    return v * metric.to_unit


def compare(tables: Mapping[str, pd.DataFrame], base: str, candidate: str) -> pd.DataFrame:
    """The ``compare`` table of runs ``base`` and ``candidate`` (run ids) from the report
    ``tables`` of a Dataset that holds both (see the module text)."""
    rows: list[dict[str, object]] = []
    for m in measures():
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
    families: dict[str, Measure] = {}
    for m in measures():   # per family, the most specific table the runs have
        if m.family is not None and m.table in have:
            best = families.get(m.family)
            if best is None or m.family_rank < best.family_rank:
                families[m.family] = m
    keep = {m.table: m for m in families.values()}
    table = table[table["table"].isin(list(keep))]
    for name, m in keep.items():   # rows that hold other rows' time (an op's whole interval)
        if m.whole is not None:
            mine = table["table"] == name
            table = table[~(mine & table["key"].astype(str).map(m.whole).astype(bool))]
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
        col = out["key"].map(got).astype("float64") * metric.to_unit
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
    table of :func:`dptrace.formats.nccl.compute.settings`; ``batches``: the global batch per step
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
