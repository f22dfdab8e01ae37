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
    #: what the views read this table as, so that no view names a format's table:
    #: ``"job"`` (the job figure per run and ``metric_key``: compare's and scaling's
    #: throughput), ``"instances"`` (per-instance series: ``scaling --by instances``)
    role: str | None = None
    #: the run's communication time, when the table holds it (:class:`Comm`)
    comm: Comm | None = None
    #: the per-run tables of the compare and scaling sections made from this table
    wide: tuple[Wide, ...] = ()
    #: a time column whose growth from the smallest run names "the cost that grew" of a
    #: scaling efficiency finding (the first measure, by ``order``, whose runs have rows)
    growth: str | None = None
    #: the hint of compare's largest change when it is a row of this table (from its key)
    hint: Callable[[str], str] | None = None


@dataclass(frozen=True)
class Comm:
    """How a compared table gives a run's communication time (one row per run): scaling's
    communication columns and compare's communication findings read it through this."""

    #: the metric column of the communication time per rank (summed over the run's rows)
    time: str
    #: the metric column of the run's whole time (elapsed, the timeline's span)
    whole: str
    #: the column of the communication share of the whole time
    share: str
    #: what the time is, in a sentence ("MPI time per rank")
    what: str
    #: its short name ("MPI" time, "collective" time)
    short: str
    #: scaling's ``comm_from`` ("mpitrace")
    source: str


@dataclass(frozen=True)
class Wide:
    """One table of the compare or scaling section made from a compared table: one row per
    key, one column per run (:func:`wide`)."""

    #: the section table's name; several ``Wide`` of one name stack, a row per key and ``what``
    name: str
    #: the metric column laid out
    column: str
    #: the ``key`` of the stacked rows ("negotiation share of the timeline"); "" for none
    what: str = ""
    #: the views that show it
    views: tuple[str, ...] = ("scaling",)
    #: its place among the section's tables (lower first)
    order: int = 1000


@dataclass(frozen=True)
class Settings:
    """Rows of the setup table (:func:`setup`) that a format's tables state."""

    #: who states them ("nccl")
    name: str
    #: ``table(name)`` (a Dataset's table or None) -> the long table ``run``, ``setting``,
    #: ``value`` (text or None)
    rows: Callable[[Callable[[str], pd.DataFrame | None]], pd.DataFrame | None]
    #: the settings that are the network path between nodes (``setup_change`` judges them)
    network: tuple[str, ...] = ()
    order: int = 100


S = 1.0
US = 1e-6
_MEASURES: dict[str, Measure] = {}
_FOUND = False
#: the module of a format package that declares its compared tables
FORMAT_COMPARE = "compare"


_SETTINGS: dict[str, Settings] = {}
#: ``table(name) -> {run: (global batch per step or None, why not)}``, declared by formats
_BATCHES: list[Callable[[Callable[[str], pd.DataFrame | None]],
                        Mapping[str, tuple[float | None, str]]]] = []


def register_measures(*measures: Measure) -> None:
    """Declare report tables compared across runs (a table declared again is replaced)."""
    for m in measures:
        _MEASURES[m.table] = m


def register_settings(*settings: Settings) -> None:
    """Declare setup rows a format's tables state (a name declared again is replaced)."""
    for s in settings:
        _SETTINGS[s.name] = s


def register_batches(fn: Callable[[Callable[[str], pd.DataFrame | None]],
                                  Mapping[str, tuple[float | None, str]]]) -> None:
    """Declare where a run's global batch per step comes from (the work a step does: the
    efficiency of a step time needs it)."""
    if fn not in _BATCHES:
        _BATCHES.append(fn)


def settings() -> list[Settings]:
    """The declared setup rows, in order (the formats' ``compare`` modules on first use)."""
    measures()
    return sorted(_SETTINGS.values(), key=lambda s: s.order)


def batches(table: Callable[[str], pd.DataFrame | None]) -> dict[str, tuple[float | None, str]]:
    """Per run, its global batch per step and why not (the first declaration that knows)."""
    measures()
    out: dict[str, tuple[float | None, str]] = {}
    for fn in _BATCHES:
        for run, got in fn(table).items():
            out.setdefault(run, got)
    return out


def with_role(role: str) -> Measure | None:
    """The first measure (by order) that plays ``role`` (``job``, ``instances``), or None."""
    return next((m for m in measures() if m.role == role), None)


def comm_measures() -> list[Measure]:
    """The measures that hold a run's communication time, in order."""
    return [m for m in measures() if m.comm is not None]


def wides(tables: Mapping[str, pd.DataFrame], view: str, runs: Sequence[str],
          names: Sequence[str] | None = None, *, empty: bool = False,
          ) -> dict[str, pd.DataFrame]:
    """The view's per-run tables (each measure's :class:`Wide`), by name in their order;
    several ``Wide`` of one name stacked (their rows keyed by ``what``); empty ones left
    out unless ``empty``."""
    parts: dict[str, list[pd.DataFrame]] = {}
    places: dict[str, int] = {}
    for m in measures():
        for w in m.wide:
            if view not in w.views:
                continue
            places[w.name] = min(places.get(w.name, w.order), w.order)
            got = wide(tables, m.table, w.column, runs, names)
            if len(got):
                parts.setdefault(w.name, []).append(got.assign(key=w.what) if w.what else got)
            elif empty:
                parts.setdefault(w.name, [])
                if not parts[w.name]:
                    parts[w.name].append(got)
    out = {}
    for name in sorted(parts, key=lambda n: places[n]):
        got = [p for p in parts[name] if len(p)] or parts[name][:1]
        out[name] = pd.concat(got, ignore_index=True) if len(got) > 1 else got[0]
    return out


def growth(tables: Mapping[str, pd.DataFrame], runs: Sequence[str]) -> pd.DataFrame:
    """The per-run times of the first measure with a ``growth`` column whose runs have
    rows: what a scaling efficiency finding names as the cost that grew."""
    for m in measures():
        if m.growth is not None:
            got = wide(tables, m.table, m.growth, runs)
            if len(got):
                return got
    return pd.DataFrame(columns=["key", *runs])


def hint(table: str, key: str) -> str:
    """The hint of a largest change in ``table`` at ``key`` (its measure's), or ""."""
    m = measure(table)
    return m.hint(key) if m is not None and m.hint is not None else ""


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
    from .scaling import better as _better
    from .scaling import unit as _job_unit

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


def stated(table: Callable[[str], pd.DataFrame | None]) -> pd.DataFrame | None:
    """The setup rows every declared :class:`Settings` finds in the tables (``table(name)``:
    a Dataset's table or None), in their order: ``run``, ``setting``, ``value``."""
    parts = [got for s in settings() if (got := s.rows(table)) is not None and len(got)]
    return pd.concat(parts, ignore_index=True) if parts else None


def network_settings() -> tuple[str, ...]:
    """The setup rows that are the network path between nodes (every declaration's)."""
    return tuple(x for s in settings() for x in s.network)


#: the setup's rows that are the job's layout, before the formats' (:func:`stated`)
JOB_ROWS = ("world size", "nodes", "launcher", "global batch per step")


def setup(runs: pd.DataFrame, stated: pd.DataFrame | None,
          batches: Mapping[str, tuple[float | None, str]] | None, order: Sequence[str],
          names: Sequence[str] | None = None) -> pd.DataFrame:
    """What each run's setup is, side by side: ``setting``, one column per run (``names``,
    default the run ids; text, None where the run's inputs do not say it) and ``changed``
    (True when two runs state different values; a setting one run states and another does
    not is not a change, except an ``NCCL_*`` / ``HOROVOD_*`` variable that a run with NCCL
    lines does not state: ``not stated`` there, since NCCL prints each variable it reads).

    ``runs``: the runs table (world size, nodes, launcher); ``stated``: the long table
    ``run``, ``setting``, ``value`` of what the formats' tables state (:func:`stated`: NCCL's
    version, network, transports, variables); ``batches``: the global batch per step
    (:func:`batches`). Rows: :data:`JOB_ROWS`, then the stated ones in their order; a row
    no run states is left out."""
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
    if stated is not None and len(stated):
        for row in stated.itertuples(index=False):
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
