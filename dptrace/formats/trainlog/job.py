"""The job figure: for every run and metric, the job's training throughput and how it was made.

This is the number a user reads first, so the rule is explicit and each row says which one
gave it (``how``, ``rule``), which ranks it covers and what printed figure it was checked
against. Per run and metric, among the training series (``phase == "train"``, repeats
skipped), the figure comes from the first kind the run has:

1. ``printed_global``: an end-of-run figure printed for the whole job (HF Trainer's
   ``train_samples_per_second``, a Horovod benchmark's ``Total img/sec on N GPU(s)``, the
   transformers hook's ``training_sequences_per_second``). Copies printed by several ranks
   are one figure: the first printed, when all agree within :data:`AGREE`; copies that
   disagree are different runs or a problem, never averaged: the first printed is shown,
   ``copies_agree`` is False and a finding says so.
2. ``steady_global``: per-step figures that cover the job (Megatron's ``samples per
   second`` or global batch / iteration time, DeepSpeed's ``CurrSamplesPerSec``, the flops
   profiler's ``samples/second``): the mean over steps after warm-up.
3. Per-rank or per-device figures: ``sum_of_ranks`` for samples, images and tokens;
   ``mean_of_ranks`` for iterations and steps per second (ranks of a synchronous
   data-parallel job step together: the job's rate is a rank's rate);
   ``mean_of_instances`` for SambaFlow's one line per instance (SambaNova's docs average
   them: each line counts the samples of the whole job); ``rank0_times_world`` when
   fewer ranks printed than the world has (typically rank 0 alone): the mean printed rate
   times the world size, an estimate.
4. ``one_printer``: a per-process figure whose printer's rank and job's world are unknown.

Where the run also prints a global figure of the same metric that was not chosen, the job
figure is checked against it (``check_*``): they agree when within the printed +- range
(Horovod prints one), else within :data:`AGREE`. Like is checked with like: one process's
figure against the job figure divided by the world size, and, without a world size, not at
all (``check_agrees`` None: two scopes, not a failed check).

A line that states its own scope is the job's figure, never multiplied: the training-log
reader makes ``global`` the figures of a line that says how many processes or devices it
covers (``Throughput: 4751.982 images/s, Batch size: 16, Num of GPUs: 8``, ``on 8 GPUs``,
``world size: 8``, ``global``, ``total``). ``rank0_times_world`` is an estimate, and says so.
Figures printed every N steps without a step (MXNet's Speedometer, DeepSpeed-Chat's
``CurSamplesPerSec``, a script's ``global 6800.4 samples/sec``) are a series: the mean after
warm-up, as numbered steps; only end-of-run figures (:data:`END_OF_RUN_PATTERNS`) are copies.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np
import pandas as pd

from ...analysis.keys import RUN, run_first
from ...frames import factorize
from ...names import rank_of_path
from ...schema import first_rows
from . import throughput as thr

#: copies of a global figure (and a figure and its check) agree within this fraction
AGREE = 0.05
#: rates of steps: ranks step together, so the job's rate is one rank's rate
SYNCHRONOUS_METRICS = frozenset({"iterations_per_s", "steps_per_s", "batches_per_s"})
#: patterns whose instances are documented units that add up (SambaNova instances)
INSTANCE_PATTERNS = frozenset({"sambaflow"})
#: per-step global series, best first (Megatron's own iteration timing over DeepSpeed's
#: timer, which leaves out the data loader; the flops profiler's one-off figure last)
_STEPPED_GLOBAL = {"megatron": 0, "horovod_benchmark": 1, "deepspeed": 2, "deepspeed_flops": 3}
#: patterns whose figures without a step are end-of-run summaries printed once per printer
#: (HF Trainer's dict and metrics table, the transformers hook, Horovod's Total img/sec, TF's
#: final stats dict): several of them are copies, never a series over time. Other figures
#: without a step (a script's 'global 6800.4 samples/sec' every 20 steps, the flops
#: profiler's one profiled step) are a series: the mean after warm-up
END_OF_RUN_PATTERNS = frozenset({"hf_trainer", "hf_metrics_table", "transformers_hook",
                                 "horovod_benchmark", "py_dict"})

COLUMNS = ["run", "input", "metric", "value", "how", "rule", "ranks", "printers", "world_size",
           "source", "pattern", "name", "label", "scope", "rows", "value_all_steps",
           "copies_agree", "check_name", "check_value", "check_range", "check_agrees",
           "first_lineno"]


def job_figures(tp: pd.DataFrame, runs: pd.DataFrame | None = None,
                fraction: float = thr.WARMUP_FRACTION,
                check_ranges: Mapping[tuple[str, str], float] | None = None,
                metrics: pd.DataFrame | None = None,
                mllog: pd.DataFrame | None = None, *,
                inst: pd.DataFrame | None = None,
                summary: pd.DataFrame | None = None,
                figures: Figures | None = None) -> pd.DataFrame:
    """One row per run, input and metric: the job figure (see the module's docstring).

    ``input`` is the training log the figure comes from, or the directory of a job's
    per-rank logs: a run of several logs that are not one job's rank files (a directory of
    unrelated logs is one run) gets a job figure per log, each from its own lines and
    checked only against them, with the world size its own lines state (the run's world
    size only when the run has that one log).

    ``inst`` and ``summary``: :func:`.throughput.per_instance` and
    :func:`.throughput.throughput_summary` of ``tp`` (with ``run``; repeats dropped), when
    the caller has them: their training series are those the figures are made from.
    ``figures``: where figures made with them are kept for :func:`series_figures` (given the
    same tables, runs and warm-up) to take.
    """
    if mllog is not None and len(mllog):
        # MLPerf logs (the ``mllog`` table): each log's own figure is its run's headline, the
        # training-log rows of the same log its check (dptrace.formats.mllog.compute)
        from ..mllog.compute import with_job_figures
        return with_job_figures(job_figures(tp, runs, fraction, check_ranges, metrics,
                                            inst=inst, summary=summary, figures=figures),
                                mllog, tp, runs, fraction)
    given = tp
    tp = _by_input(tp)
    if RUN not in tp:
        inst = summary = figures = None
    elif tp is not given:   # per-rank files' rows are their directory's: their series too
        inst, summary = _renamed(inst, given, tp), _renamed(summary, given, tp)
        figures = None
    metrics = _by_input(metrics)
    pairs = [*_pairs(tp), *_pairs(metrics)]
    inputs: dict[str, set[str]] = {}
    for run, source in pairs:
        inputs.setdefault(run, set()).add(_group_of(source))
    if not any(len(g) > 1 for g in inputs.values()):   # every run one input
        out = _job_figures(tp, _world_sizes(runs), fraction, check_ranges, metrics,
                           inst=inst, summary=summary,
                           figures=figures if inst is not None else None)
        return _with_input(out, pairs)
    groups_tp = _groups(tp)
    groups_m = _groups(metrics) if metrics is not None else None
    found = [g for g in (groups_tp, groups_m) if g is not None and len(g)]
    every = pd.concat(found)
    world = _world_sizes(runs)
    single = set(every.groupby(every.index.get_level_values(0), observed=True).nunique()
                 .loc[lambda n: n == 1].index.astype(str))
    parts = []
    for group in pd.unique(every.to_numpy()):
        sub_tp = tp[_in_group(tp, group)]
        sub_m = metrics[_in_group(metrics, group)] if metrics is not None else None
        w = {r: n for r, n in world.items() if r in single}
        w.update(_stated_world(sub_m))
        part = _job_figures(sub_tp, w, fraction, check_ranges, sub_m)
        if len(part):
            parts.append(part.assign(input=_display(group)))
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    return _with_steps(out, pd.DataFrame(columns=COLUMNS), tp if RUN in tp else out)


def takes_given(tp: pd.DataFrame, metrics: pd.DataFrame | None = None) -> bool:
    """Whether :func:`job_figures` makes the figures of ``tp`` (with ``run``; no MLPerf log)
    from the ``inst`` and ``summary`` it is given: every run is one input and no per-rank
    file is renamed to its directory. It then reads of ``tp`` only the first row of each
    (series, instance), each (run, source)'s first row, and every row of a series without
    a step (an end-of-run figure's copies, :func:`_global_value`); of ``metrics`` each
    (run, source)'s first row and the ``step_time_s``, ``step_time_avg_s`` and first
    ``total_img_sec_ci`` rows. (``dptrace watch`` hands it tables of those rows only.)"""
    if RUN not in tp or _by_input(tp) is not tp or _by_input(metrics) is not metrics:
        return False
    inputs: dict[str, set[str]] = {}
    for run, source in [*_pairs(tp), *_pairs(metrics)]:
        inputs.setdefault(run, set()).add(_group_of(source))
    return not any(len(g) > 1 for g in inputs.values())


def _by_input(df: pd.DataFrame | None) -> pd.DataFrame | None:
    """``df`` with each per-rank file's ``source`` replaced by its layout's directory, so
    that one kind of line printed to every rank's file is one series, its printers the
    ranks (the figure's ``source`` then names the directory)."""
    if df is None or df.empty or "source" not in df:
        return df
    src = df["source"]
    codes, uniques = pd.factorize(src.astype("object"))
    mapped = [_group_of(str(u)) for u in uniques]
    if all(m == str(u) for m, u in zip(mapped, uniques, strict=True)):
        return df
    return df.assign(source=pd.Series(np.asarray(mapped, dtype=object)[codes],
                                      index=df.index, dtype="string"))


def _renamed(df: pd.DataFrame | None, given: pd.DataFrame, tp: pd.DataFrame,
             ) -> pd.DataFrame | None:
    """``df`` (a table of ``given``'s series) with each source named as in ``tp``
    (:func:`_by_input` of ``given``) when that only renames series: every run of ``given``
    has one source (no two files' series become one, and the series keep their order);
    else None (made again from ``tp``)."""
    if df is None or given.empty or RUN not in given:
        return None
    pairs = pd.DataFrame({RUN: given[RUN].astype("object"),
                          "old": given["source"].astype("object"),
                          "new": tp["source"].astype("object")}).drop_duplicates()
    if pairs[RUN].duplicated().any() or pairs["old"].duplicated().any():
        return None
    names = dict(zip(pairs["old"], pairs["new"], strict=True))
    source = df["source"].astype("object")
    if not source.isin(names).all():
        return None
    return df.assign(source=source.map(names))


def _pairs(df: pd.DataFrame | None) -> list[tuple[str, str]]:
    """The (run, source) pairs of ``df`` as text, in the order they first come (run
    ``'run'`` when it has none)."""
    if df is None or df.empty or "source" not in df:
        return []
    cols = [c for c in (RUN, "source") if c in df]
    first = first_rows(thr.group_ids(df, cols))
    source = [str(s) for s in df["source"].take(first).tolist()]
    run = ([str(r) for r in df[RUN].take(first).tolist()] if RUN in df
           else ["run"] * len(source))
    return list(zip(run, source, strict=True))


@lru_cache(maxsize=65536)
def _group_of(source: str) -> str:
    """The input a figure belongs to: a per-rank layout's directory, else the file; as the
    sources name it (a relative path stays relative: reports do not depend on where the
    user's files sit)."""
    found = rank_of_path(source.split("::")[0])
    return os.path.normpath(found[1]) if found is not None else source


def _groups(df: pd.DataFrame | None) -> pd.Series | None:
    """Each (run, source)'s input group, indexed by (run, source)."""
    if df is None or df.empty or "source" not in df:
        return None
    cols = [c for c in (RUN, "source") if c in df]
    pairs = df[cols].drop_duplicates()
    if RUN not in pairs:
        pairs = pairs.assign(**{RUN: "run"})
    idx = pd.MultiIndex.from_arrays([pairs[RUN].astype(str), pairs["source"].astype(str)])
    return pd.Series([_group_of(str(s)) for s in pairs["source"]], index=idx, dtype="object")


def _in_group(df: pd.DataFrame, group: str) -> pd.Series:
    src = df["source"].astype("object")
    uniq = pd.unique(src)
    hit = {s for s in uniq if _group_of(str(s)) == group}
    return src.isin(hit)


def _display(group: str) -> str:
    return os.path.basename(group.rstrip("/")) or group


def _stated_world(metrics: pd.DataFrame | None) -> dict[str, int]:
    """Per run, the world size the input's own lines state (``world_size`` rows), when they
    agree."""
    if metrics is None or metrics.empty or "name" not in metrics:
        return {}
    said = metrics[metrics["name"] == "world_size"]
    out: dict[str, int] = {}
    if RUN not in said:
        said = said.assign(**{RUN: "run"})
    for run, g in said.groupby(RUN, observed=True, sort=False):
        sizes = {int(v) for v in g["value"].dropna() if float(v).is_integer() and v > 0}
        if len(sizes) == 1:
            out[str(run)] = sizes.pop()
    return out


def _with_input(out: pd.DataFrame, pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """The ``input`` column of a table made for runs of one input each (``pairs``: the
    (run, source) pairs of the throughput rows, then of the metrics: :func:`_pairs`)."""
    if out.empty:
        return out
    first = {r: _display(_group_of(s)) for r, s in pairs}
    return out.assign(input=out[RUN].astype(str).map(first))


def _job_figures(tp: pd.DataFrame, world: dict[str, int],
                 fraction: float = thr.WARMUP_FRACTION,
                 check_ranges: Mapping[tuple[str, str], float] | None = None,
                 metrics: pd.DataFrame | None = None, *,
                 inst: pd.DataFrame | None = None,
                 summary: pd.DataFrame | None = None,
                 figures: Figures | None = None) -> pd.DataFrame:
    """The job figures of runs of one input each (see :func:`job_figures`).

    ``tp``: the ``throughput`` table (``run`` optional); ``runs``: the ``runs`` table, for
    the world sizes; ``check_ranges``: +- ranges printed beside global figures, by (run,
    series name) (:func:`printed_ranges`); ``metrics``: the ``train_metrics`` table, for a
    ``step_time_s`` row per run that prints step times (Megatron's iteration time, nanoGPT's
    ``time 35.2ms``, ``dt=``): the mean over the steps after warm-up. Rows come per run in
    run order, the run's headline metric first (samples, sequences, images, then tokens,
    then steps, then the step time)."""
    given = inst is not None and summary is not None
    # (with the series given, the rows are read only as _Series(train, _ROW_COLS) reads them)
    train = _training(tp, [*_SERIES_KEYS, *_ROW_COLS] if given else None)
    steps = _step_times(metrics, fraction)
    if train.empty:
        return _with_steps(pd.DataFrame(columns=COLUMNS), steps,
                           metrics if metrics is not None else tp)
    if RUN not in train:
        train = train.assign(**{RUN: "run"})
    if inst is not None and summary is not None:
        # the training series of the whole table's: each series' rows, warm-up, median and
        # order are its own (phase is a series key), so they equal those made from ``train``
        inst = inst[_is_train(inst)].reset_index(drop=True)
        summary = summary[_is_train(summary)].reset_index(drop=True)
    else:
        inst = thr.per_instance(train, fraction)
        summary = thr.throughput_summary(train, fraction, inst=inst)
    ranges = dict(check_ranges or {})
    out = []
    summary = summary.assign(_pos=np.arange(len(summary)))
    inst_s = _Series(inst, _INST_COLS, _Inst.maker)
    train_s = _Series(train, _ROW_COLS, _Rows.maker)
    # the rows as dicts of the values iterrows gives (the table's ``values``, one conversion):
    # a Series per row costs a pandas look-up per key, and each key is read many times
    columns = summary.columns.tolist()
    every = [dict(zip(columns, values, strict=True)) for values in summary.values]
    for (run, metric), cands in summary.groupby([RUN, "metric"], sort=False, observed=True):
        ranked = sorted(((_priority(r, inst_s), int(r["_pos"]), r)
                         for r in (every[i] for i in cands["_pos"])),
                        key=lambda t: (t[0], t[1]))
        w = world.get(str(run))
        best = ranked[0][2]
        row = _figure_of(best, inst_s, train_s, w, str(metric), figures)
        if row["copies_agree"] is False:  # the copy another printed figure confirms
            _confirmed_copy(row, [r for _, _, r in ranked[1:]], inst_s, train_s, w,
                            str(metric))
        later: list[pd.Series] = []
        if row["how"] == "printed_global":  # checked against another printed figure of the
            # job, else the ranks' (per-device x world size), else a per-step one
            later = [r for p, _, r in ranked[1:] if p[0] == 0] + \
                [r for p, _, r in ranked[1:] if p[0] >= 2] + \
                [r for p, _, r in ranked[1:] if p[0] == 1][:1]
        elif row["how"] == "steady_global":  # against the ranks' figures (not against
            # another timer's per-step figure: Megatron's and DeepSpeed's measure differently)
            later = [r for p, _, r in ranked[1:] if p[0] >= 2]
        if later:
            chk = later[0]
            other = _figure_of(chk, inst_s, train_s, w, str(metric), figures)
            other.pop("_copies", None)
            rng = ranges.get((str(run), str(best["name"])))
            row.update(_check(row, other, _series_name(chk), rng, w, str(metric)))
        row.pop("_copies", None)
        row.pop("_factor", None)
        out.append({RUN: run, "metric": metric, **row})
    return _with_steps(pd.DataFrame(out, columns=COLUMNS), steps, tp)


def _with_steps(df: pd.DataFrame, steps: pd.DataFrame, like: pd.DataFrame) -> pd.DataFrame:
    """The figures and the step times, per run in the runs' order (``like``'s ``run``
    categories, else as they come), the headline metric first."""
    if len(steps):
        df = pd.concat([df, steps[COLUMNS]], ignore_index=True) if len(df) else steps[COLUMNS]
    if df.empty:
        return df.reset_index(drop=True)
    head = [_headline(m) for m in df["metric"].tolist()]
    runs = df[RUN].astype("object").tolist()
    if RUN in like and isinstance(like[RUN].dtype, pd.CategoricalDtype):
        place = {r: i for i, r in enumerate(like[RUN].cat.categories.tolist())}
        run_at = [place.get(r, len(place)) for r in runs]
    else:
        run_at = _codes(runs)
    input_at = _codes(df["input"].astype("object").tolist()) if "input" in df \
        else [0] * len(df)
    order = sorted(range(len(df)), key=lambda i: (run_at[i], input_at[i], head[i]))
    out = df.iloc[order].reset_index(drop=True)
    return run_first(out, like) if RUN in like else out


def _missing(v: object) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and v != v)


def _codes(values: list[object]) -> list[int]:
    """``pd.factorize``'s codes of ``values``: in order of first appearance, a missing
    value -1."""
    seen: dict[object, int] = {}
    return [-1 if _missing(v) else seen.setdefault(v, len(seen)) for v in values]


def _step_times(metrics: pd.DataFrame | None, fraction: float) -> pd.DataFrame:
    """Per run, the mean step time after warm-up (``step_time_s`` rows of ``train_metrics``;
    ranks step together: the mean over printers)."""
    if metrics is None or metrics.empty or "name" not in metrics:
        return pd.DataFrame(columns=COLUMNS)
    avg = _running_step_times(metrics)
    st = metrics[metrics["name"] == "step_time_s"]
    if "repeat" in st:
        st = st[~st["repeat"].fillna(False).astype(bool)]
    if st.empty:
        return avg
    if RUN not in st:
        st = st.assign(**{RUN: "run"})
    frame = st.assign(metric="step_time_s", scope="instance", phase="train", label=None)
    inst = thr.per_instance(frame, fraction)
    out = []
    done: set[str] = set()
    for (run, source, pattern), g in inst.groupby([RUN, "source", "pattern"], sort=False,
                                                  observed=True):
        v = g["value"].astype("float64")
        if str(run) in done or not v.notna().any():
            continue  # one step time per run: the first series that prints one
        done.add(str(run))
        n = len(g)
        ranks = _rank_list(g.loc[g["instance"].notna(), "instance"])
        out.append({
            RUN: run, "metric": "step_time_s", "value": float(v.mean()),
            "how": "steady_step_time", "ranks": ranks or "?", "printers": n,
            "world_size": None, "source": source, "pattern": pattern, "name": "step_time_s",
            "label": None, "scope": "instance", "rows": int(g["rows"].sum()),
            "value_all_steps": float(g["value_all"].astype("float64").mean()),
            "copies_agree": True, "check_name": None, "check_value": None,
            "check_range": None, "check_agrees": None,
            "first_lineno": int(g["first_lineno"].min()),
            "rule": f"mean step time over the steps after warm-up ({pattern} lines)"
                    + (f", mean of {n} printers" if n > 1 else ""),
        })
    df = pd.DataFrame(out, columns=COLUMNS)
    if len(avg):  # runs that print only a running average
        avg = avg[~avg[RUN].astype(str).isin(done)]
        df = pd.concat([df, avg], ignore_index=True) if len(df) else avg
    return df


def _running_step_times(metrics: pd.DataFrame) -> pd.DataFrame:
    """Per run, the last running-average step time printed (``step_time_avg_s``:
    modded-nanogpt's ``step_avg``, train_time / steps so far): the whole run's step time.
    (The mean over steps of a running average would weigh the early steps many times.)"""
    st = metrics[metrics["name"] == "step_time_avg_s"]
    if st.empty:
        return pd.DataFrame(columns=COLUMNS)
    if RUN not in st:
        st = st.assign(**{RUN: "run"})
    out = []
    for run, g in st.groupby(RUN, sort=False, observed=True):
        last = g.sort_values("lineno", kind="stable").iloc[-1]
        out.append({
            RUN: run, "metric": "step_time_s", "value": float(last["value"]),
            "how": "running_average", "ranks": "?", "printers": 1, "world_size": None,
            "source": last["source"], "pattern": last["pattern"], "name": "step_time_avg_s",
            "label": None, "scope": "instance", "rows": len(g),
            "value_all_steps": float(last["value"]), "copies_agree": True, "check_name": None,
            "check_value": None, "check_range": None, "check_agrees": None,
            "first_lineno": int(g["lineno"].min()),
            "rule": f"the last running average of the step time printed (line "
                    f"{int(last['lineno'])}, step {last['step']}): the whole run's",
        })
    return pd.DataFrame(out, columns=COLUMNS)


def _training(tp: pd.DataFrame, cols: list[str] | None = None) -> pd.DataFrame:
    """The training rows of ``tp`` (no phase is training; repeats skipped), with only the
    columns ``cols`` that it has when given (one take of those: not a copy of every
    column)."""
    if tp.empty:
        return tp
    keep = np.ones(len(tp), dtype=bool)
    if "phase" in tp:
        keep &= _is_train(tp)
    if "repeat" in tp:
        keep &= ~tp["repeat"].fillna(False).astype(bool).to_numpy(dtype=bool)
    if cols is not None:
        tp = tp[[c for c in tp.columns if c in cols]]
    return tp if keep.all() else tp[keep]


def _is_train(df: pd.DataFrame) -> np.ndarray:
    """The rows of training series (as :func:`_training` keeps them: no phase is training);
    a categorical phase's answer taken per category (no object per row)."""
    phase = df["phase"]
    if isinstance(phase.dtype, pd.CategoricalDtype):
        answers = np.array([bool(v == "train") for v in phase.cat.categories] + [True],
                           dtype=bool)
        return answers[phase.cat.codes.to_numpy()]   # code -1 (missing): the last, True
    return (phase.astype("object").fillna("train") == "train").to_numpy(dtype=bool)


def _headline(metric: object) -> int:
    m = str(metric)
    if m in ("samples_per_s", "sequences_per_s", "images_per_s"):
        return 0
    if m == "step_time_s":
        return 3
    return 1 if m == "tokens_per_s" else 2


def _world_sizes(runs: pd.DataFrame | None) -> dict[str, int]:
    if runs is None or runs.empty or "world_size" not in runs:
        return {}
    return {str(r): int(w) for r, w in zip(runs["run"], runs["world_size"], strict=True)
            if pd.notna(w) and int(w) > 0}


_SERIES_KEYS = [RUN, *thr.SERIES]


class _Series:
    """The rows of each series of a frame (``run`` and :data:`.throughput.SERIES`, those it
    has; a missing value a value of its own): ``by(row)`` gives the rows whose keys equal
    ``row``'s, as ``df[mask]`` would (same rows, order and index), from one grouping of
    the frame instead of one comparison of every key column per series (a folder of 1,000
    runs: 1,000 series x every run's rows)."""

    def __init__(self, df: pd.DataFrame, keep: list[str] | None = None,
                 wrap: Callable[[pd.DataFrame], Callable[[np.ndarray], Any]] | None = None,
                 ) -> None:
        #: ``keep``: the columns the rows are wanted with (all when None); ``wrap``: made
        #: of the frame once, what a series' row positions are handed out as (the frame's
        #: rows when None)
        self.df = df if keep is None else df[[c for c in keep if c in df]]
        self.wrap = None if wrap is None else wrap(self.df)
        self.cols = [k for k in _SERIES_KEYS if k in df]
        self.pos: dict[tuple, np.ndarray] = {}
        self._taken: dict[tuple, Any] = {}
        if df.empty:
            return
        ids = thr.group_ids(df, self.cols)
        first = first_rows(ids)
        # (each key column's values at the groups' first rows only: no object per row)
        values = [_keys(df[c].take(first).to_numpy(dtype=object)) for c in self.cols]
        order = np.argsort(ids, kind="stable")
        cuts = np.cumsum(np.bincount(ids))[:-1]
        for key, pos in zip(zip(*values, strict=True), np.split(order, cuts), strict=True):
            self.pos[key] = pos

    def by(self, row: pd.Series) -> Any:
        key = tuple(_key(row[k]) for k in self.cols)
        found = self._taken.get(key)
        if found is None:   # (each series is asked for several times: taken once)
            pos = self.pos.get(key)
            pos = pos if pos is not None else np.zeros(0, dtype=np.int64)
            found = self.wrap(pos) if self.wrap is not None else self.df.iloc[pos]
            self._taken[key] = found
        return found


#: the columns :func:`_figure` and :func:`_global_value` read of a series' instances and rows
_INST_COLS = ["instance", "value", "value_all", "first_lineno", "first_step"]
_ROW_COLS = ["instance", "lineno", "value"]


class _Inst:
    """A series' instances (rows of :func:`.throughput.per_instance`) as :func:`_figure`
    reads them: arrays, and the few figures it takes of them with pandas' own arithmetic
    (``pandas.core.nanops``: a sum over the values with the missing ones as 0, a mean that
    sum over the count), so that each is the very float the Series methods give."""

    def __init__(self, instance: np.ndarray, value: np.ndarray, value_all: np.ndarray,
                 stepped: bool, first_lineno: object) -> None:
        self.n = len(instance)
        self.instance = instance
        self.named = ~pd.isna(instance)
        self.value, self.value_all = value, value_all
        self.stepped, self.first_lineno = stepped, first_lineno

    def __len__(self) -> int:
        return self.n

    @staticmethod
    def maker(df: pd.DataFrame) -> Callable[[np.ndarray], _Inst]:
        """Each series' :class:`_Inst` from its row positions in ``df``, the columns
        converted once for all series."""
        instance = df["instance"].to_numpy(dtype=object)
        value = df["value"].astype("float64").to_numpy()
        value_all = df["value_all"].astype("float64").to_numpy()
        step_known = df["first_step"].notna().to_numpy(dtype=bool)
        lines = df["first_lineno"]
        whole = (lines.to_numpy(dtype="int64")
                 if pd.api.types.is_integer_dtype(lines.dtype) and not lines.isna().any()
                 else None)

        def make(pos: np.ndarray) -> _Inst:
            if not len(pos):
                first: object = None
            elif whole is not None:     # (Series.min of integers without a missing one)
                first = whole[pos].min()
            else:
                first = lines.iloc[pos].min()
            return _Inst(instance[pos], value[pos], value_all[pos],
                         bool(step_known[pos].any()), first)
        return make


class _Rows:
    """A series' rows as :func:`_global_value` reads them: the columns of
    :data:`_ROW_COLS` as arrays (each converted once for all series), and ``frame()``, the
    rows themselves (taken only where the arrays do not sort: :func:`_by_rank_keys`)."""

    def __init__(self, frame: Callable[[], pd.DataFrame], instance: np.ndarray,
                 lineno: np.ndarray, value: np.ndarray) -> None:
        self.frame, self.instance, self.lineno, self.value = frame, instance, lineno, value

    @staticmethod
    def maker(df: pd.DataFrame) -> Callable[[np.ndarray], _Rows]:
        """Each series' :class:`_Rows` from its row positions in ``df``: only the rows of
        the series asked for are converted (the rows of a global end-of-run figure, a few
        copies), not an object per row of the whole table."""
        def make(pos: np.ndarray) -> _Rows:
            rows = df.iloc[pos]
            return _Rows(partial(df.iloc.__getitem__, pos),
                         rows["instance"].to_numpy(dtype=object),
                         rows["lineno"].to_numpy(dtype=object),
                         rows["value"].astype("float64").to_numpy())
        return make


def _nansum(v: np.ndarray) -> float:
    """``Series.sum()`` of float64 values (missing ones count 0)."""
    return float(np.where(np.isnan(v), 0.0, v).sum(dtype=np.float64))


def _nanmean(v: np.ndarray) -> float:
    """``Series.mean()`` of float64 values (NaN when none is known)."""
    count = int((~np.isnan(v)).sum())
    return float(np.where(np.isnan(v), 0.0, v).sum(dtype=np.float64) / count) if count \
        else float("nan")


def _key(v: object) -> object:
    """A key value as :class:`_Series` compares it: every missing value one (None)."""
    return None if v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v)) else v


def _keys(values: np.ndarray) -> list[object]:
    return [_key(v) for v in values]


def _instances(inst: _Series, row: pd.Series) -> _Inst:
    return inst.by(row)


def _rows(train: _Series, row: pd.Series) -> _Rows:
    return train.by(row)


def _stepped(inst: _Inst) -> bool:
    return inst.stepped


def _priority(row: pd.Series, inst: _Series) -> tuple[int, int]:
    mine = _instances(inst, row)
    if row["scope"] == "global":
        if _end_of_run(row, mine):
            return (0, 0)
        return (1, _STEPPED_GLOBAL.get(str(row["pattern"]), 9)
                + (5 if str(row["name"]).startswith("RunningAvg") else 0))
    known = mine.named.any()
    return (2, 0) if known else (3, 0)


def _end_of_run(row: pd.Series, inst: _Inst) -> bool:
    """A figure printed once at the end of the run (by each printer): no step, and a
    pattern of :data:`END_OF_RUN_PATTERNS`."""
    return not _stepped(inst) and str(row["pattern"]) in END_OF_RUN_PATTERNS


def _series_name(row: pd.Series) -> str:
    label = row["label"]
    name = str(row["name"])
    if isinstance(label, str) and label:
        return f"{name} [{label}]"
    return name


def _global_value(inst: _Inst, rows_of: Callable[[], _Rows],
                  copies: list[float] | None = None, end_of_run: bool | None = None,
                  ) -> tuple[float, bool, str]:
    """(value, copies agree, what) of a global series: the first printed copy of an
    end-of-run figure; else the first printer's (in rank order) mean after warm-up, the
    other printers' being copies."""
    if end_of_run is None:
        end_of_run = not _stepped(inst)
    if end_of_run:  # rank 0's copy first (then the others by rank), each in line order
        rows = rows_of()
        values = rows.value[_by_rank(rows)]
    else:
        values = inst.value
    values = values[~np.isnan(values)]
    if not len(values):
        return float("nan"), True, "no value"
    if copies is not None:
        copies.extend(float(v) for v in values)
    first = float(values[0])
    lo, hi = float(values.min()), float(values.max())
    agree = hi <= 0 or (hi - lo) <= AGREE * hi
    n = len(values)
    if n == 1:
        return first, True, ""
    if agree:
        return first, True, f"{n} copies agree within {_pct((hi - lo) / hi if hi else 0)}"
    return first, False, f"{n} copies disagree ({_num(lo)} to {_num(hi)}): the first is shown"


_RANK_LABEL = re.compile(r"^(\D*)(\d+)(.*)$")   # (:func:`.throughput.rank_keys`'s)


def _by_rank(rows: _Rows) -> np.ndarray:
    """The positions of ``rows`` by printer in rank order (:func:`.throughput.rank_keys`),
    printers without a label last, then by line: sorted in Python over the few copies of a
    figure, with the same keys (labels of text, ASCII rank numbers of 15 digits at most,
    known lines; anything else is sorted as :func:`.throughput.rank_keys` sorts it)."""
    labels, lines = rows.instance, rows.lineno
    keys = []
    for pos, (label, line) in enumerate(zip(labels, lines, strict=True)):
        if line is None or line is pd.NA or (isinstance(line, float) and np.isnan(line)):
            return _by_rank_keys(rows.frame())
        if not isinstance(label, str):
            if label is None or label is pd.NA or (isinstance(label, float) and np.isnan(label)):
                keys.append((True, "", (True, 0), "", line, pos))
                continue
            return _by_rank_keys(rows.frame())
        m = _RANK_LABEL.match(label)
        if m is None:
            keys.append((False, label, (True, 0), "", line, pos))
            continue
        digits = m.group(2)
        if not digits.isascii() or len(digits) > 15:
            return _by_rank_keys(rows.frame())
        keys.append((False, m.group(1), (False, int(digits)), m.group(3), line, pos))
    return np.array([k[-1] for k in sorted(keys)], dtype=np.int64)


def _by_rank_keys(rows: pd.DataFrame) -> np.ndarray:
    keys = thr.rank_keys(rows["instance"]).assign(
        _na=rows["instance"].isna().to_numpy(), _line=rows["lineno"].to_numpy(),
        _pos=np.arange(len(rows)))
    order = keys.sort_values(["_na", "text", "number", "rest", "_line"], kind="stable")
    return order["_pos"].to_numpy()


#: figures already made, by (the series' keys, world size, metric): :func:`_figure_of`
Figures = dict[tuple, dict[str, object]]


def _figure_of(row: pd.Series, inst: _Series, rows: _Series, world: int | None, metric: str,
               figures: Figures | None) -> dict[str, object]:
    """:func:`_figure` of the series ``row``, made once per series, world size and metric
    for ``figures`` (the job figures and the per-series table ask for the same training
    series: the report's context keeps one ``figures`` for both); a copy."""
    if figures is None:
        return _figure(row, _instances(inst, row), partial(_rows, rows, row), world, metric)
    key = (tuple(_key(row[k]) for k in _SERIES_KEYS), world, metric)
    found = figures.get(key)
    if found is None:
        found = figures[key] = _figure(row, _instances(inst, row), partial(_rows, rows, row),
                                       world, metric)
    return dict(found)


def _figure(row: pd.Series, inst: _Inst, rows_of: Callable[[], _Rows],
            world: int | None,
            metric: str) -> dict[str, object]:
    name = _series_name(row)
    stepped = _stepped(inst)
    once = _end_of_run(row, inst)
    warm = f"mean over steps after warm-up of {name}" if stepped else name
    if not stepped and not once and int(row["rows"]) > 1:  # a series without steps
        warm = f"mean over the lines after warm-up of {name}"
    known = inst.instance[inst.named]
    ranks = _rank_list_of(known.tolist())
    out: dict[str, object] = {
        "source": row["source"], "pattern": row["pattern"], "name": row["name"],
        "label": row["label"], "scope": row["scope"], "rows": int(row["rows"]),
        "printers": int(len(inst)), "world_size": world, "copies_agree": True,
        "check_name": None, "check_value": None, "check_range": None, "check_agrees": None,
        "first_lineno": int(inst.first_lineno) if len(inst) else None,  # type: ignore[call-overload]
    }
    values = inst.value
    alls = inst.value_all
    if row["scope"] == "global":
        found: list[float] = []
        value, agree, copies = _global_value(inst, rows_of, found, once)
        out["_copies"] = found
        how = "printed_global" if once else "steady_global"
        rule = (f"{name}, printed for the whole job" if once
                else f"{warm} (a figure for the whole job)")
        if copies:
            rule += f"; {copies}"
        out.update(value=value, value_all_steps=float(alls[0]) if len(alls) else value,
                   how=how, rule=rule, copies_agree=agree,
                   ranks=f"all {world}" if world else "all")
        return out
    n = len(inst)
    note = ""
    if once and n == 1 and not len(known):
        # an end-of-run figure of unknown printers: copies (one per printer), never averaged.
        # Any other figure without a step is a series (MXNet's Speedometer 'Epoch[0] Batch
        # [20-40]  Speed: 77689.35 samples/sec' every 20 batches): the mean after warm-up
        found = []
        first, agree, note = _global_value(inst, rows_of, found)
        if len(found) > 1:
            values = alls = np.array([first], dtype=np.float64)
            out.update(_copies=found, copies_agree=agree)
            note = f"; {note}" if note else ""
    if metric in SYNCHRONOUS_METRICS:
        value, vall = _nanmean(values), _nanmean(alls)
        if n > 1:
            how, rule = "mean_of_ranks", (f"{warm}: mean of {n} printers' rates (ranks of a "
                                          "data-parallel job step together)")
        else:
            who = f"rank {ranks}" if ranks else "one printer"
            how, rule = "one_printer", (f"{warm}: {who}'s rate (ranks of a data-parallel job "
                                        f"step together: the job's rate){note}")
        out.update(value=value, value_all_steps=vall, how=how, rule=rule,
                   ranks=ranks or "?")
        return out
    if str(row["pattern"]) in INSTANCE_PATTERNS:
        # SambaNova's docs: "The throughput is calculated by averaging the e2e
        # samples_per_sec over the different instances" (each counts the job's samples)
        out.update(value=_nanmean(values), value_all_steps=_nanmean(alls),
                   how="mean_of_instances",
                   rule=f"mean over {n} SambaNova instances of {name}, as SambaNova's docs "
                        f"compute it (their sum: {_num(_nansum(values))})",
                   ranks=f"{n} instances")
        return out
    unit = "device" if row["scope"] == "device" else "process"
    if world and n < world:
        who = (f"rank {ranks}" if len(known) == n and n == 1 else
               f"ranks {ranks}" if len(known) == n else "one printer (rank not printed)"
               if n == 1 else f"{n} printers")
        mean, mean_all = _nanmean(values), _nanmean(alls)
        out.update(value=mean * world, value_all_steps=mean_all * world,
                   how="rank0_times_world", _factor=world,
                   rule=f"an estimate from {who}: {_num(mean)} per {unit} x world size {world} "
                        f"({warm}){note}",
                   ranks=f"{ranks or '?'} of {world}")
        return out
    if n > 1:
        out.update(value=_nansum(values), value_all_steps=_nansum(alls),
                   how="sum_of_ranks", rule=f"sum over {n} printers of {warm}",
                   ranks=ranks or "?")
        return out
    if len(known):
        out.update(value=_nansum(values), value_all_steps=_nansum(alls),
                   how="one_printer", ranks=ranks,
                   rule=f"{warm} of rank {ranks}" + ("" if world else "; world size unknown"))
        return out
    out.update(value=_nansum(values), value_all_steps=_nansum(alls), how="one_printer",
               rule=f"{warm}: one {unit}'s rate; its rank and the world size are unknown{note}",
               ranks="?")
    return out


def _confirmed_copy(row: dict[str, object], later: list[pd.Series], inst: _Series,
                    train: _Series, world: int | None, metric: str) -> None:
    """Copies of an end-of-run figure disagree (two printers, e.g. HF Trainer's dict printed
    by rank 0 and by another node's local rank 0, whose runtime leaves out the checkpoint
    save): show the copy that another printed figure of the same metric and scope (rank 0's
    ``***** train metrics *****`` table) confirms, when exactly one does."""
    mine = row.get("_copies")
    if not isinstance(mine, list):
        return
    for other_row in later:
        other_inst = _instances(inst, other_row)
        if other_row["scope"] != row["scope"] or _stepped(other_inst):
            continue
        other = _figure(other_row, other_inst, partial(_rows, train, other_row), world, metric)
        factor = float(other.get("_factor", 1) or 1)  # type: ignore[arg-type]
        target = float(other["value"]) / factor  # type: ignore[arg-type]
        if not np.isfinite(target):
            continue
        close = sorted({v for v in mine if _agrees(v, target, None)})
        if len(close) == 1:
            own = float(row.get("_factor", 1) or 1)  # type: ignore[arg-type]
            before = float(row["value"]) / own  # type: ignore[arg-type]
            row["value"] = close[0] * own
            if own != 1:
                row["rule"] = str(row["rule"]).replace(f"{_num(before)} per",
                                                       f"{_num(close[0])} per")
            row["rule"] = str(row["rule"]).replace(
                "the first is shown", f"the one {_series_name(other_row)} confirms is shown")
        return


def _check(row: dict[str, object], other: dict[str, object], name: str, rng: float | None,
           world: int | None, metric: str) -> dict[str, object]:
    """The ``check_*`` columns of a job figure checked against ``other``, like with like: a
    figure of one process (``one_printer`` of a rate that adds up over ranks) is compared
    with the job figure divided by the world size; without a world size it is not compared
    (``check_agrees`` None: figures of different scopes, never a failed check)."""
    out: dict[str, object] = {"check_name": f"{name} ({other['how']})",
                              "check_value": other["value"], "check_range": rng}
    if other["how"] != "one_printer" or metric in SYNCHRONOUS_METRICS:
        out["check_agrees"] = _agrees(other["value"], row["value"], rng)
        return out
    if world:
        share = float(row["value"]) / world  # type: ignore[arg-type]
        out["check_name"] = (f"{name} (one process's rate, checked against the job figure / "
                             f"world size {world} = {_num(share)})")
        out["check_agrees"] = _agrees(other["value"], share, rng / world if rng else None)
        return out
    out["check_name"] = (f"{name} (one process's rate: another scope than the job's, not "
                         "compared without a world size)")
    out["check_agrees"] = None
    return out


def _agrees(value: object, check: object, rng: float | None) -> bool | None:
    try:
        v, c = float(value), float(check)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not (np.isfinite(v) and np.isfinite(c)):
        return None
    tol = max(rng or 0.0, AGREE * abs(c))
    return bool(abs(v - c) <= tol)


def _rank_list(instances: pd.Series) -> str:
    """'0-3,8' for ranks 0, 1, 2, 3 and 8; other labels joined with commas."""
    return _rank_list_of(instances.tolist())


def _rank_list_of(values: list) -> str:
    """:func:`_rank_list` of the labels ``values``."""
    labels = [str(x) for x in values]
    if not labels:
        return ""
    if all(x.isdigit() for x in labels):
        nums = sorted({int(x) for x in labels})
        parts, start, prev = [], nums[0], nums[0]
        for x in nums[1:] + [None]:
            if x is not None and x == prev + 1:
                prev = x
                continue
            parts.append(f"{start}" if start == prev else f"{start}-{prev}")
            if x is not None:
                start = prev = x
        return ",".join(parts)
    if len(labels) > 6:
        return ",".join(labels[:3]) + f",... ({len(labels)})"
    return ",".join(labels)


def _num(x: float) -> str:
    if not np.isfinite(x) or abs(x) >= 1e15:  # '1e+308', 'inf': not 300 digits
        return f"{x:.4g}"
    return f"{x:,.4g}" if abs(x) < 1000 else f"{x:,.0f}"


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def printed_ranges(metrics: pd.DataFrame) -> dict[tuple[str, str], float]:
    """+- ranges printed beside global figures (Horovod benchmark ``Total img/sec on 4
    GPU(s): 291.1 +-5.2``: a ``train_metrics`` row ``total_img_sec_ci``), by (run, name)."""
    if metrics is None or metrics.empty or "name" not in metrics:
        return {}
    rows = metrics[metrics["name"] == "total_img_sec_ci"]
    out: dict[tuple[str, str], float] = {}
    for run, value in zip(rows[RUN] if RUN in rows else ["run"] * len(rows), rows["value"],
                          strict=True):
        if pd.notna(value):
            out.setdefault((str(run), "Total img/sec"), float(value))
    return out


def series_figures(summary: pd.DataFrame, tp: pd.DataFrame, runs: pd.DataFrame | None = None,
                   fraction: float = thr.WARMUP_FRACTION,
                   inst: pd.DataFrame | None = None,
                   figures: Figures | None = None) -> pd.DataFrame:
    """``summary`` (:func:`.throughput.throughput_summary`) with each series' ``job_value``,
    ``job_value_all_steps`` and ``job_rule`` made by this module's rules (a global series'
    first copy, never a mean of disagreeing copies; iterations per second a mean over
    ranks, not a sum; a per-device series of rank 0 times the world size) and ``job_how``.
    ``inst``: :func:`.throughput.per_instance` of ``tp`` (without repeats), when the caller
    has it; ``figures``: those :func:`job_figures` made of the same tables (with ``inst``)."""
    if summary.empty:
        return summary.assign(job_how=pd.Series(dtype="object"))
    # (with ``inst`` given, the rows are read only as _Series(work, _ROW_COLS) reads them:
    # those columns are taken before the repeats are dropped, not a copy of every column)
    work = _phased_rows(tp, [*_SERIES_KEYS, *_ROW_COLS, "repeat"]
                        if inst is not None and RUN in tp else None)
    if RUN not in work:
        work = work.assign(**{RUN: "run"})
        summary = summary.assign(**{RUN: "run"})
        added = True
    else:
        added = False
    if inst is None or added:   # (per_instance drops the repeats itself)
        inst = thr.per_instance(work, fraction)
    world = _world_sizes(runs)
    values, alls, rules, hows = [], [], [], []
    inst_s = _Series(inst, _INST_COLS, _Inst.maker)
    work_s = _Series(work, _ROW_COLS, _Rows.maker)
    columns = summary.columns.tolist()
    for row in (dict(zip(columns, v, strict=True)) for v in summary.values):  # (iterrows')
        fig = _figure_of(row, inst_s, work_s, world.get(str(row[RUN])), str(row["metric"]),
                         None if added else figures)
        fig.pop("_copies", None)
        fig.pop("_factor", None)
        values.append(fig["value"])
        alls.append(fig["value_all_steps"])
        rules.append(fig["rule"])
        hows.append(fig["how"])
    out = summary.assign(job_value=values, job_value_all_steps=alls, job_rule=rules,
                         job_how=hows)
    return out.drop(columns=[RUN]) if added else out


def _phased_rows(tp: pd.DataFrame, cols: list[str] | None = None) -> pd.DataFrame:
    """``tp`` without its repeats; only its columns ``cols`` when given."""
    if cols is not None:
        tp = tp[[c for c in tp.columns if c in cols]]
    if "repeat" in tp and tp["repeat"].any():
        return tp[~tp["repeat"].fillna(False).astype(bool)]
    return tp


# -- end-of-run summaries: a log that stops before its trainer's summary ----------------------

#: trainers that print an end-of-run summary whenever their training loop finishes, each as
#: (name, the lines printed while training, the summary), each of those as (table, pattern,
#: names): rows of ``train_metrics`` (``metrics``) or of ``throughput`` with a step
#: (``tp_stepped``) or without (``tp_unstepped``), of that pattern and (when given) those
#: names. HF Trainer prints
#: ``{'loss': ..., 'grad_norm': ..., 'learning_rate': ...}`` every ``logging_steps`` and,
#: through the same callback, ``{'train_runtime': ..., 'train_samples_per_second': ...}``
#: when ``train()`` returns; Horovod's synthetic benchmarks print ``Iter #k: X img/sec per
#: GPU`` per iteration, then ``Img/sec per GPU`` and ``Total img/sec on N GPU(s)``. Trainers
#: that print no summary of their own (Megatron, DeepSpeed, tqdm bars, Keras) are not
#: judged: a log of theirs cannot tell a finished run from a killed one. Lightning's end-of-fit
#: line is not parsed, so it is not judged either.
SUMMARIES: tuple[tuple[str, tuple[str, str, frozenset[str]], tuple[str, str, frozenset[str]]],
                 ...] = (
    ("HF Trainer",
     ("metrics", "hf_trainer", frozenset({"loss", "grad_norm", "learning_rate"})),
     ("metrics", "hf_trainer", frozenset({"train_runtime_s"}))),
    ("Horovod benchmark",
     ("tp_stepped", "horovod_benchmark", frozenset()),
     ("tp_unstepped", "horovod_benchmark", frozenset())),
)

SUMMARY_COLUMNS = ["run", "input", "file", "trainer", "lines", "first_lineno", "last_lineno",
                   "summary", "expected"]

#: what each trainer's summary is, for a message
EXPECTED = {"HF Trainer": "the {'train_runtime': ...} dict HF Trainer prints when train() "
                          "returns",
            "Horovod benchmark": "the 'Img/sec per ...' and 'Total img/sec on N ...' lines "
                                 "the benchmark prints after its last iteration"}


@dataclass
class _Seen:
    """What :func:`end_summaries` found of one trainer in one run's input."""

    lines: int = 0
    file: str | None = None
    first: int | None = None
    last: int | None = None
    summary: bool = False


def end_summaries(tp: pd.DataFrame | None, metrics: pd.DataFrame | None) -> pd.DataFrame:
    """One row per run, input (a log, or the directory of a job's per-rank logs, as the
    sources name it) and trainer of :data:`SUMMARIES` whose training lines the input has:
    ``file`` (the input's log with those lines, the last by name), ``lines`` (how many lines,
    over the input's logs), the first and last of them in ``file``, ``summary`` (whether the
    input also has the trainer's end-of-run summary, in any of its files) and ``expected``
    (what that summary is)."""
    tables = {"metrics": metrics, "tp_stepped": tp, "tp_unstepped": tp}
    found: dict[tuple[str, str, str], _Seen] = {}
    columns: dict[tuple[int, str], tuple[np.ndarray, dict[object, int]]] = {}

    def codes(df: pd.DataFrame, col: str) -> tuple[np.ndarray, dict[object, int]]:
        """A column's codes and the code of each value (one factorisation per table)."""
        key = (id(df), col)
        if key not in columns:
            c, values = factorize(df[col])
            columns[key] = (c, {v: i for i, v in enumerate(values.tolist())})
        return columns[key]

    for trainer, during, summary in SUMMARIES:
        for role, (table, pattern, names) in (("during", during), ("summary", summary)):
            df = tables[table]
            if df is None or df.empty or "pattern" not in df:
                continue
            pat, place = codes(df, "pattern")
            hit = pat == place.get(pattern, -2)
            if not hit.any():
                continue
            if names:
                name, place = codes(df, "name")
                hit &= np.isin(name, [place[n] for n in names if n in place])
            if table == "tp_stepped":
                hit &= df["step"].notna().to_numpy(dtype=bool)
            elif table == "tp_unstepped":
                hit &= df["step"].isna().to_numpy(dtype=bool)
            rows = df[hit]
            if rows.empty:
                continue
            runs = rows[RUN].astype(str).tolist() if RUN in rows else ["run"] * len(rows)
            at: dict[tuple[str, str], list[int]] = {}   # each (run, source)'s rows, in order
            for i, key in enumerate(zip(runs, rows["source"].astype(str).tolist(),
                                        strict=True)):
                at.setdefault(key, []).append(i)
            line_of = rows["lineno"].astype("float64").to_numpy()
            for (r, src), where in at.items():
                seen = found.setdefault((r, _group_of(src), trainer), _Seen())
                if role == "summary":
                    seen.summary = True
                    continue
                lines = line_of[where]
                lines = lines[~np.isnan(lines)]
                seen.lines += len(np.unique(lines))
                if seen.file is None or src > seen.file:
                    seen.file, seen.first, seen.last = src, int(lines.min()), int(lines.max())
    out = [(r, inp, e.file, trainer, e.lines, e.first, e.last, e.summary, EXPECTED[trainer])
           for (r, inp, trainer), e in found.items() if e.lines]
    return pd.DataFrame(out, columns=SUMMARY_COLUMNS)
