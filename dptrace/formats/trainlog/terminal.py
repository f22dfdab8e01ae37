"""The rich drawer of the Throughput section: a panel per series, instances and the job."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
from rich.bar import Bar
from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from ...reports.fmt import fmt, vs_median
from ...reports.model import Section
from . import throughput as thr
from .instances import shown as printer

#: series shown in full, most important first (never setup bars); the rest are counted in one
#: line (``show_all`` shows them; all are in --json)
MAX_SERIES = 12
#: instances drawn per series before eliding the middle
MAX_INSTANCES = 32
#: phases of the work around training (schema.PHASES): hidden unless ``show_all``
SETUP_PHASES = ("load", "download")


def draw_throughput(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    """Series in :func:`~dptrace.formats.trainlog.throughput.series_order`; by default the first
    :data:`MAX_SERIES` that are not setup, and a line saying what is left out; with the
    option ``show_all``, every series, setup bars included."""
    show_all = bool((opts or {}).get("show_all", False))
    summary, inst = section.tables["summary"], section.tables["instances"]
    order = _across_runs(thr.series_order(summary))
    shown = order
    if not show_all:
        shown = order[~_phase(order).isin(SETUP_PHASES)].head(MAX_SERIES)
    parts: list[RenderableType] = [Text(section.title, style="bold"), Text(section.caption,
                                                                          style="dim")]
    jobs = section.tables.get("job")
    if jobs is not None and len(jobs):
        parts.append(_job_table(jobs))
    series_keys = _SeriesKeys(inst)
    for _, row in shown.iterrows():
        parts.append(_series_panel(row, _instances_of(inst, row, series_keys)))
    if len(shown) < len(order):   # (shown is taken from order: the same size, the same rows)
        hidden = order.drop(shown.index)
        parts.append(Text(_hidden_line(hidden), style="dim"))
    return Group(*parts)


def _across_runs(order: pd.DataFrame) -> pd.DataFrame:
    """The series of several runs (each run's in :func:`~dptrace.formats.trainlog.throughput.
    series_order`) taken a run at a time: every run's first series, then every run's second,
    ..., known trainers' lines before other named lines before progress bars, setup bars
    last, so that a folder of many jobs shows each job's headline first."""
    if "run" not in order or order["run"].nunique() < 2:
        return order
    setup = _phase(order).isin(SETUP_PHASES).to_numpy()
    pattern = order["pattern"].astype("object")
    kind = np.where(pattern.isin(thr.TRAINER_PATTERNS), 0,
                    np.where(pattern.isin(thr.BAR_PATTERNS), 2, 1))
    pos = order.groupby([order["run"].astype("object").to_numpy(), setup, kind],
                        sort=False).cumcount().to_numpy()
    keyed = order.assign(_setup=setup, _kind=kind, _pos=pos)
    return keyed.sort_values(["_setup", "_kind", "_pos"], kind="stable") \
        .drop(columns=["_setup", "_kind", "_pos"]).reset_index(drop=True)


#: what ``how`` means, in a few words
_HOW = {"printed_global": "printed for the job", "steady_global": "job figure per step",
        "sum_of_ranks": "sum over ranks", "mean_of_ranks": "a rank's rate",
        "mean_of_instances": "mean of instances",
        "rank0_times_world": "estimate: one rank x world size",
        "one_printer": "one process", "steady_step_time": "step time",
        "running_average": "step time, whole run"}


def _job_table(jobs: pd.DataFrame) -> Table:
    """The job figure per run and metric: the number, how it was made, its check."""
    several = jobs["run"].nunique() > 1 if "run" in jobs else False
    inputs = jobs["input"].nunique() > 1 if "input" in jobs else False
    t = Table(title="Job throughput", title_justify="left", title_style="bold", box=None,
              pad_edge=False)
    if several:
        t.add_column("run", overflow="fold")
    if inputs:
        t.add_column("input", overflow="fold")
    for col, just in (("metric", "left"), ("job", "right"), ("how", "left"),
                      ("ranks", "left"), ("rule / check", "left")):
        t.add_column(col, justify=just, overflow="fold")  # type: ignore[arg-type]
    for _, r in jobs.iterrows():
        note = str(r["rule"])
        style = ""
        if isinstance(r.get("check_value"), (int, float)) and pd.notna(r.get("check_value")):
            agrees = r.get("check_agrees")
            rng = r.get("check_range")
            pm = f" +-{fmt(rng)}" if isinstance(rng, (int, float)) and pd.notna(rng) else ""
            if agrees is None or pd.isna(agrees):  # another scope: shown, not compared
                note += f"; beside it {r['check_name']}: {fmt(r['check_value'])}{pm}"
            else:
                note += (f"; checked against {r['check_name']}: {fmt(r['check_value'])}{pm}, "
                         + ("agrees" if agrees else "DOES NOT AGREE"))
            if agrees is False:
                style = "yellow"
        if r.get("copies_agree") is False:
            style = "yellow"
        cells = [fmt(r["value"]), _HOW.get(str(r["how"]), str(r["how"])), str(r["ranks"]),
                 note]
        row = [str(r["metric"]), *cells]
        if inputs:
            row = [str(r["input"]), *row]
        if several:
            row = [str(r["run"]), *row]
        t.add_row(*row, style=style)
    return t


def _phase(summary: pd.DataFrame) -> pd.Series:
    """Each series' phase (train when the table has none)."""
    if "phase" not in summary:
        return pd.Series("train", index=summary.index, dtype="object")
    return summary["phase"].astype("object").fillna("train")


def _hidden_line(hidden: pd.DataFrame) -> str:
    """'... and 41 more series (27 training, 12 setup bars: downloads, loading); --all shows
    them'."""
    phase = _phase(hidden)
    parts = []
    for name, what in (("train", "training"), ("eval", "eval")):
        if n := int((phase == name).sum()):
            parts.append(f"{n} {what}")
    setup = hidden[phase.isin(SETUP_PHASES)]
    if len(setup):
        kinds = ", ".join(_setup_kinds(setup["label"]))
        parts.append(f"{len(setup)} setup bar{'s' if len(setup) > 1 else ''}"
                     + (f": {kinds}" if kinds else ""))
    return (f"... and {len(hidden)} more series ({', '.join(parts)}); --all shows them, "
            "--json has them all")


#: the first word of a setup bar's label -> what the elision line calls it
_SETUP_WORDS = {"downloading": "downloads", "download": "downloads", "fetching": "downloads",
                "loading": "loading", "load": "loading"}


def _setup_kinds(labels: pd.Series, most: int = 4) -> list[str]:
    """What the setup bars do, from their labels' first words: downloads, loading, map, ..."""
    kinds: list[str] = []
    for label in labels.dropna().astype(str):
        words = label.split()
        word = words[0].strip(":").lower() if words else ""
        kind = _SETUP_WORDS.get(word, word)
        if kind and kind not in kinds:
            kinds.append(kind)
    return kinds[:most] + (["..."] if len(kinds) > most else [])


#: a missing value in a series' key (every kind of missing value is this one)
_NA = object()


def _key_value(value: object) -> object:
    if value is None or value is pd.NA or value is pd.NaT or (
            isinstance(value, float) and math.isnan(value)):
        return _NA
    return value


class _SeriesKeys:
    """Each row's series key (its :data:`~dptrace.formats.trainlog.throughput.SERIES`
    values, missing ones alike) of an instances table, made once for all the series drawn
    (a mask of pandas comparisons per series and column cost ~0.3 ms each)."""

    def __init__(self, inst: pd.DataFrame) -> None:
        self._inst = inst
        self._keys: dict[tuple[str, ...], list[tuple[object, ...]]] = {}

    def rows_of(self, cols: list[str], want: tuple[object, ...]) -> list[int]:
        """The positions of the rows whose values of ``cols`` are ``want``."""
        keys = self._keys.get(tuple(cols))
        if keys is None:
            columns = [[_key_value(v) for v in self._inst[c].astype(object).tolist()]
                       for c in cols]
            keys = self._keys[tuple(cols)] = list(zip(*columns, strict=True)) if columns \
                else [()] * len(self._inst)
        return [i for i, k in enumerate(keys) if k == want]


def _instances_of(inst: pd.DataFrame, row: pd.Series,
                  series_keys: _SeriesKeys | None = None) -> pd.DataFrame:
    """The rows of ``inst`` that belong to the series ``row`` (equal values of each
    :data:`~dptrace.formats.trainlog.throughput.SERIES` column both have; missing matches
    missing), in rank order."""
    cols = [c for c in thr.SERIES if c in inst and c in row]
    want = tuple(_key_value(row[c]) for c in cols)
    sel = inst.iloc[(series_keys or _SeriesKeys(inst)).rows_of(cols, want)]
    ranked = thr.rank_sort_keys(sel["instance"])
    if ranked is None:   # (labels pandas' engine may read otherwise: its own sort)
        keys = thr.rank_keys(sel["instance"]).assign(_line=sel["first_lineno"])
        return sel.loc[keys.sort_values(["text", "number", "rest", "_line"],
                                        kind="stable").index]
    line = sel["first_lineno"].to_numpy(dtype="float64", na_value=np.nan)
    key = list(zip(ranked, np.isnan(line).tolist(), np.nan_to_num(line).tolist(),
                   strict=True))
    return sel.iloc[sorted(range(len(sel)), key=key.__getitem__)]


def _series_panel(row: pd.Series, inst: pd.DataFrame) -> RenderableType:
    label = f" [{row['label']}]" if isinstance(row["label"], str) else ""
    phase = row.get("phase")
    phase_note = f" · {phase}" if isinstance(phase, str) and phase != "train" else ""
    title = Text.assemble((f"{row['name']}{label}", "bold cyan"),
                          f"  {row['metric']} · scope {row['scope']} · {row['pattern']}"
                          f"{phase_note}")
    body: list[RenderableType] = []
    if row["instances"] > 1 and not _identical_copies(row):  # one instance: nothing to compare
        body.append(_instance_table(row, inst))
    body.append(_aggregate_table(row, inst))
    return Panel(Group(*body), title=title,
                 title_align="left", subtitle=Text(str(row["source"]), style="dim"),
                 subtitle_align="right")


def _instance_table(row: pd.Series, inst: pd.DataFrame) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False)
    for col, just in (("instance", "right"), (str(row["metric"]), "right"), ("", "left"),
                      ("steps", "right"), ("vs median", "right"), ("line", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    values = pd.to_numeric(inst["value"], errors="coerce").astype("float64")
    finite = values[np.isfinite(values)]
    top = float(finite.max()) if len(finite) else 0.0
    shown = _elide(inst)
    for r in shown.itertuples(index=False):
        if r.instance is None:
            table.add_row("…", "", "", "", "", "")
            continue
        style = "bold red" if r.straggler else ""
        bar = Bar(size=1.0, begin=0, end=_bar_fraction(r.value, top), width=28,
                  color="red" if r.straggler else "green")
        steps = f"{r.rows} ({r.warmup_rows} warm-up)" if r.warmup_rows else str(r.rows)
        table.add_row(Text(printer(r.instance), style=style), Text(fmt(r.value), style=style), bar,
                      steps, vs_median(r.below_median_pct), fmt(r.first_lineno))
    return table


def _bar_fraction(value: object, top: float) -> float:
    """How much of a bar ``value`` fills, in [0, 1], when ``top`` fills it all: 0 for a
    missing or non-finite value (rich's Bar fails on NaN and inf, and on values whose
    product with its width overflows, like 1e308)."""
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.0
    if not math.isfinite(v) or v <= 0 or not top > 0:
        return 0.0
    return min(v / top, 1.0)


def _elide(inst: pd.DataFrame) -> pd.DataFrame:
    if len(inst) <= MAX_INSTANCES:
        return inst
    slow = inst.nsmallest(MAX_INSTANCES // 2, "value").index
    first = np.arange(len(inst)) < MAX_INSTANCES // 4  # by position: inst is in rank order
    keep = inst.loc[inst.index.isin(slow) | first]
    gap = pd.DataFrame([{c: None for c in inst.columns}])
    return pd.concat([keep, gap], ignore_index=True)


def _identical_copies(row: pd.Series) -> bool:
    """A global figure printed by several ranks with (nearly) the same value."""
    spread = (row["max"] - row["min"]) / row["median"] if row["median"] else 0.0
    return bool(row["scope"] == "global" and row["instances"] > 1 and spread <= 0.01)


def _aggregate_table(row: pd.Series, inst: pd.DataFrame) -> Table:
    t = Table(box=None, show_header=False, pad_edge=False)
    t.add_column(style="bold")
    t.add_column(justify="right")
    t.add_column(style="dim")
    t.add_row("job", fmt(row["job_value"]), str(row["job_rule"]))
    if row["warmup_rows"]:
        t.add_row("job, all steps", fmt(row["job_value_all_steps"]),
                  f"{row['warmup_rows']} warm-up rows included")
    if row["instances"] == 1 and len(inst) == 1:
        one = inst.iloc[0]
        rows, warm = int(one["rows"]), int(one["warmup_rows"])
        if pd.notna(one["first_step"]):
            steps = f"{rows} step{'s' if rows != 1 else ''}"
            steps += f" ({warm} warm-up)" if warm else ""
        else:
            steps = f"{rows} line{'s' if rows != 1 else ''}"
        t.add_row("instance", printer(one["instance"]),
                  f"{steps}, from line {fmt(one['first_lineno'])}")
    if row["scope"] == "global" and row["instances"] > 1:
        lines = inst["first_lineno"]
        t.add_row("copies", str(row["instances"]),
                  f"lines {fmt(lines.min())}-{fmt(lines.max())}; min {fmt(row['min'])}, "
                  f"max {fmt(row['max'])}")
    elif row["instances"] > 1:
        t.add_row("mean", fmt(row["mean"]), "per instance (SambaNova convention)")
        t.add_row("harmonic mean", fmt(row["hmean"]), "")
        t.add_row("median / min / max", f"{fmt(row['median'])} / {fmt(row['min'])} / "
                  f"{fmt(row['max'])}", "")
        t.add_row("std / CV", f"{fmt(row['std'])} / {fmt(100 * row['cv'], 1)}%", "")
        t.add_row("slowest", f"instance {row['slowest_instance']}",
                  f"{fmt(row['slowest_value'])}, {fmt(row['slowest_below_median_pct'], 1)}% "
                  f"below median; {row['stragglers']} straggler(s) >5% below")
    return t
