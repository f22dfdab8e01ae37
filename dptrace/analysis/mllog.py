"""MLPerf ``:::MLLOG`` events: what a run's log says of its time to train, epochs and
throughput.

Functions take the ``mllog`` table. A run's log is one source (per ``run`` first when the
table has it, :mod:`.keys`). The rules, exact where the log gives enough and silent where it
does not:

- **time to train**: the first ``run_start`` to the first ``run_stop`` after it (MLPerf's own
  measure), with the ``status`` that run_stop carries (success, aborted).
- **epochs**: the distinct ``epoch_num`` of the ``epoch_stop`` events.
- **throughput** (samples per second), first that applies:
  1. ``printed``: the mean of the numeric ``throughput`` values the log prints (NVIDIA's
     v1.0+ logs print one per epoch, the whole job's images per second);
  2. ``tracked_stats``: the mean of the ``tracked_stats`` values that hold a single number
     (``{"imgs_sec": 15982.4}``);
  3. ``epochs``: ``train_samples`` times the complete epochs, over their summed time (each
     from its first ``epoch_start`` to its first ``epoch_stop``): an epoch is one pass over
     the ``train_samples`` samples. Only where no evaluation (``eval_start``,
     ``eval_accuracy``) falls inside an epoch: an evaluation's time cannot be told from the
     training's (BERT's one "epoch" holds all its evaluations).
  Otherwise none, and ``throughput_from`` says why.
- **nodes**: the leading ``N`` of ``submission_platform`` (``8xNVIDIA DGX A100``: MLPerf's
  convention for N systems); **ranks**: the distinct launcher ranks, when ranks 0..N-1 all
  printed a line (srun -l, mpirun --tag-output).
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from .keys import keys, run_first

#: ``8xNVIDIA DGX A100``: the number of systems
_NODES = re.compile(r"^\s*(\d+)\s*x")

SUMMARY_COLUMNS = ["source", "benchmark", "platform", "nodes", "ranks", "global_batch_size",
                   "train_samples", "run_start_ms", "time_to_train_s", "status", "epochs",
                   "eval_accuracy", "throughput_samples_per_s", "throughput_from"]


def nodes_of(platform: object) -> int | None:
    """The systems a ``submission_platform`` names (``8xNVIDIA DGX A100`` -> 8)."""
    m = _NODES.match(str(platform)) if isinstance(platform, str) else None
    return int(m.group(1)) if m and int(m.group(1)) > 0 else None


def ranks_of(ranks: pd.Series) -> int | None:
    """N when ranks 0..N-1 (N > 1) all printed; None otherwise."""
    seen = {int(r) for r in ranks.dropna().unique().tolist()}
    return len(seen) if len(seen) > 1 and seen == set(range(len(seen))) else None


def _first(g: pd.DataFrame, key: str, col: str = "value") -> object:
    rows = g[g["key"] == key]
    return rows[col].iloc[0] if len(rows) else None


def epochs(ev: pd.DataFrame) -> pd.DataFrame:
    """One row per source and complete epoch: ``epoch_num``, ``start_ms``, ``stop_ms``,
    ``duration_s`` (the first epoch_start and the first epoch_stop of that epoch_num, in
    line order) and ``eval_accuracy`` (the epoch's evaluation, where one was logged)."""
    k = keys(ev, "source")
    cols = [*k, "epoch_num", "start_ms", "stop_ms", "duration_s", "eval_accuracy"]
    marks = ev[ev["key"].isin(["epoch_start", "epoch_stop"]) & ev["epoch_num"].notna()
               & ev["time_ms"].notna()]
    if marks.empty:
        return pd.DataFrame(columns=cols)
    firsts = marks.sort_values("lineno", kind="stable") \
        .drop_duplicates([*k, "key", "epoch_num"])
    wide = firsts.pivot_table(index=[*k, "epoch_num"], columns="key", values="time_ms",
                              observed=True, aggfunc="first")
    if "epoch_start" not in wide or "epoch_stop" not in wide:
        return pd.DataFrame(columns=cols)
    wide = wide.dropna(subset=["epoch_start", "epoch_stop"])
    wide = wide[wide["epoch_stop"] >= wide["epoch_start"]].reset_index()
    out = wide.rename(columns={"epoch_start": "start_ms", "epoch_stop": "stop_ms"})
    out["duration_s"] = (out["stop_ms"] - out["start_ms"]) / 1000.0
    acc = ev[(ev["key"] == "eval_accuracy") & ev["epoch_num"].notna()] \
        .drop_duplicates([*k, "epoch_num"], keep="last")[[*k, "epoch_num", "value_num"]] \
        .rename(columns={"value_num": "eval_accuracy"})
    out = out.merge(acc, on=[*k, "epoch_num"], how="left")
    out["epoch_num"] = out["epoch_num"].astype("Int64")
    return run_first(out[cols].sort_values([*k, "epoch_num"]).reset_index(drop=True), ev)


def _single_number(text: object) -> float | None:
    """The number of a ``tracked_stats`` value that holds exactly one."""
    try:
        v = json.loads(str(text))
    except ValueError:
        return None
    if isinstance(v, dict) and len(v) == 1:
        (x,) = v.values()
        if isinstance(x, int | float) and not isinstance(x, bool) and np.isfinite(x):
            return float(x)
    return None


def _throughput(g: pd.DataFrame, eps: pd.DataFrame, train_samples: object
                ) -> tuple[float | None, str]:
    printed = g.loc[g["key"] == "throughput", "value_num"].dropna()
    if len(printed):
        return float(printed.mean()), f"printed: mean of {len(printed)} 'throughput' values"
    tracked = [x for x in map(_single_number, g.loc[g["key"] == "tracked_stats", "value"])
               if x is not None]
    if tracked:
        return float(np.mean(tracked)), f"tracked_stats: mean of {len(tracked)} values"
    if eps.empty:
        return None, "none: no throughput printed and no complete epoch"
    if train_samples is None or pd.isna(train_samples) or float(train_samples) <= 0:  # type: ignore[arg-type]
        return None, "none: no throughput printed and no train_samples"
    evals = g.loc[g["key"].isin(["eval_start", "eval_accuracy"]), "time_ms"].dropna().to_numpy()
    starts, stops = eps["start_ms"].to_numpy(float), eps["stop_ms"].to_numpy(float)
    inside = ((evals[:, None] > starts[None, :]) & (evals[:, None] < stops[None, :])).any()
    if inside:
        return None, "none: evaluations inside epochs (their time cannot be told apart)"
    total = float(eps["duration_s"].sum())
    if total <= 0:
        return None, "none: the epochs took no time"
    n = len(eps)
    return (float(train_samples) * n / total,  # type: ignore[arg-type]
            f"epochs: train_samples x {n} complete epochs / their {total:,.1f} s")


def summary(ev: pd.DataFrame) -> pd.DataFrame:
    """One row per source: submission ``benchmark`` and ``platform``, ``nodes``, ``ranks``,
    ``global_batch_size``, ``train_samples``, ``run_start_ms``, ``time_to_train_s`` and
    ``status``, ``epochs``, the last ``eval_accuracy``, ``throughput_samples_per_s`` and
    ``throughput_from`` (the rules of this module)."""
    k = keys(ev, "source")
    cols = [*k[:-1], *SUMMARY_COLUMNS]
    if ev.empty:
        return pd.DataFrame(columns=cols)
    all_epochs = epochs(ev)
    rows = []
    for key, g in ev.sort_values("lineno", kind="stable").groupby(k, observed=True,
                                                                  sort=False):
        key = key if isinstance(key, tuple) else (key,)
        where = dict(zip(k, key, strict=True))
        mine = all_epochs
        for c, v in where.items():
            mine = mine[mine[c] == v]
        starts = g[(g["key"] == "run_start") & g["time_ms"].notna()]
        start = float(starts["time_ms"].iloc[0]) if len(starts) else None
        stops = g[(g["key"] == "run_stop") & g["time_ms"].notna()]
        if start is not None:
            stops = stops[stops["time_ms"] >= start]
        stop = stops.iloc[0] if len(stops) and start is not None else None
        train_samples = _first(g, "train_samples", "value_num")
        rate, why = _throughput(g, mine, train_samples)
        acc = g.loc[g["key"] == "eval_accuracy", "value_num"].dropna()
        platform = _first(g, "submission_platform")
        stopped = g.loc[g["key"] == "epoch_stop", "epoch_num"].dropna()
        rows.append({
            **where, "benchmark": _first(g, "submission_benchmark"), "platform": platform,
            "nodes": nodes_of(platform), "ranks": ranks_of(g["rank"]),
            "global_batch_size": _first(g, "global_batch_size", "value_num"),
            "train_samples": train_samples, "run_start_ms": start,
            "time_to_train_s": (float(stop["time_ms"]) - start) / 1000.0
            if stop is not None and start is not None else None,
            "status": stop["status"] if stop is not None else None,
            "epochs": stopped.nunique() if len(stopped) else None,
            "eval_accuracy": float(acc.iloc[-1]) if len(acc) else None,
            "throughput_samples_per_s": rate, "throughput_from": why,
        })
    out = pd.DataFrame(rows, columns=cols)
    for c in ("nodes", "ranks", "epochs"):
        out[c] = out[c].astype("Int64")
    for c in ("global_batch_size", "train_samples", "run_start_ms", "time_to_train_s",
              "eval_accuracy", "throughput_samples_per_s"):
        out[c] = out[c].astype("float64")
    return run_first(out, ev)
