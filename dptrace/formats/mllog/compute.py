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
- **world size** (:func:`world_of`), the first that the log states: the ranks that printed;
  the launch with the most ranks (``srun --ntasks=64``, ``mpirun -np 16``: the training's;
  the scripts' other launches run one task per node); ``WORLD_SIZE``/``SLURM_NTASKS``;
  ``DGXNNODES`` x ``DGXNGPU``; ``global_batch_size`` / (``local_batch_size`` (v1.0 logs
  print it as ``d_batch_size``) x ``gradient_accumulation_steps``), all three printed; the
  platform's N x its accelerators per node where the platform string states them
  (``8xXE8545x4A100-SXM-40GB``: 4) or names a system of :data:`ACCELERATORS_PER_SYSTEM`.
  Sources that disagree with the one used are named in ``why``.
- **the job figure** (:func:`job_figures`): the ``throughput`` events are the benchmark's own
  figure; checked against the log's Speedometer lines, else against the epochs' figure.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ...analysis.keys import keys, run_first

#: ``8xNVIDIA DGX A100``: the number of systems, and the rest of the string
_NODES = re.compile(r"^\s*(\d+)\s*x\s*(.*)$", re.S)
#: ``XE8545x4A100-SXM-40GB``: ``x`` and a count right before an accelerator's name
_PER_NODE = re.compile(r"x(\d{1,4})-?(?=[A-Za-z])")
#: accelerators per node of systems that MLPerf logs name in ``submission_platform``, each
#: checked against real logs that also state their ranks: ``NVIDIA DGX A100`` is 8 A100s
#: (MLPerf Training v1.0 NVIDIA BERT logs, srun -l: ranks 0-7 on ``1xNVIDIA DGX A100``,
#: 0-63 on ``8xNVIDIA DGX A100``; ``srun --ntasks=64 --ntasks-per-node=8``)
ACCELERATORS_PER_SYSTEM = {"nvidia dgx a100": 8}
#: the largest whole number read from a log (an int64 column holds it)
_INT64 = 2 ** 63

SUMMARY_COLUMNS = ["source", "benchmark", "platform", "nodes", "ranks", "global_batch_size",
                   "train_samples", "run_start_us", "time_to_train_s", "status", "epochs",
                   "eval_accuracy", "throughput_samples_per_s", "throughput_from"]


def whole(text: object) -> int | None:
    """A positive whole number written as ``64``, ``64.0`` (or a number): None otherwise,
    and for numbers an int64 column cannot hold (``20000000000000000000``, 5,000 digits)."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float | np.integer | np.floating):
        f = float(text)
        return int(f) if np.isfinite(f) and f.is_integer() and 0 < f < _INT64 else None
    m = re.fullmatch(r"\s*(\d{1,19})(?:\.0*)?\s*", text) if isinstance(text, str) else None
    if not m:
        return None
    n = int(m.group(1))
    return n if 0 < n < _INT64 else None


def nodes_of(platform: object) -> int | None:
    """The systems a ``submission_platform`` names (``8xNVIDIA DGX A100`` -> 8); None when
    it names none or more than an int64 holds."""
    m = _NODES.match(platform) if isinstance(platform, str) else None
    return whole(m.group(1)) if m and len(m.group(1)) <= 19 else None


def per_node_of(platform: object) -> tuple[int | None, str]:
    """(accelerators per node, how known) of a ``submission_platform``: stated in the string
    (``8xXE8545x4A100-SXM-40GB`` -> 4), else a system of :data:`ACCELERATORS_PER_SYSTEM`;
    (None, "") otherwise."""
    m = _NODES.match(platform) if isinstance(platform, str) else None
    if not m:
        return None, ""
    system = m.group(2).strip()
    found = {int(k) for k in _PER_NODE.findall(system)}
    if len(found) == 1:
        n = found.pop()
        return (n, f"'x{n}' in the platform") if n > 0 else (None, "")
    known = ACCELERATORS_PER_SYSTEM.get(" ".join(system.lower().split()))
    return (known, f"a {system} has {known}") if known else (None, "")


def ranks_of(ranks: pd.Series) -> int | None:
    """N when ranks 0..N-1 (N > 1) all printed; None otherwise."""
    seen = {int(r) for r in ranks.dropna().unique().tolist()}
    return len(seen) if len(seen) > 1 and seen == set(range(len(seen))) else None


#: launchers whose command lines the reader reads (the rest are variables)
_COMMANDS = ("srun ", "mpirun ", "mpiexec ")


def _values(ev: pd.DataFrame, key: str) -> list[tuple[str, int]]:
    """(text, number) of the rows of ``key`` whose value is a whole number (a launcher row's
    value is its text, ``srun --ntasks=64``: its number is the last word's)."""
    rows = ev.loc[ev["key"].astype("object") == key, "value"].dropna().astype(str)
    out = []
    for text in rows.tolist():
        tail = re.split(r"[\s=]", text.strip())[-1] if text.strip() else ""
        n = whole(tail)
        if n is not None:
            out.append((text, n))
    return out


def _one(pairs: list[tuple[str, int]]) -> tuple[str, int] | None:
    """The statement when every one says the same number; else None."""
    return pairs[0] if pairs and len({n for _, n in pairs}) == 1 else None


def world_of(ev: pd.DataFrame) -> tuple[int | None, str | None, int | None]:
    """(world size, what said it, nodes) of one run's (or log's) ``mllog`` rows (columns
    ``key``, ``value``, ``rank``), by the rules of this module; a source that disagrees with
    the one used is named after it. Numbers beyond int64 are never read."""
    found: list[tuple[int, str]] = []
    n = ranks_of(ev["rank"]) if "rank" in ev else None
    if n is not None:
        found.append((n, f"MLPerf :::MLLOG lines of ranks 0-{n - 1}"))
    gbs = _one(_values(ev, "global_batch_size"))
    lbs_key = "local_batch_size" if _values(ev, "local_batch_size") else "d_batch_size"
    lbs = _one(_values(ev, lbs_key))
    acc = _one(_values(ev, "gradient_accumulation_steps"))
    if gbs and lbs and acc and gbs[1] % (lbs[1] * acc[1]) == 0:
        found.append((gbs[1] // (lbs[1] * acc[1]),
                      f"MLPerf global_batch_size {gbs[1]} / ({lbs_key} {lbs[1]} x "
                      f"gradient_accumulation_steps {acc[1]})"))
    launched = [(t, k) for t, k in _values(ev, "launcher_ranks") if t.startswith(_COMMANDS)]
    per_node = _one([(t, k) for t, k in _values(ev, "launcher_ranks_per_node")
                     if t.startswith(_COMMANDS)])
    if launched:
        text, k = max(launched, key=lambda p: p[1])
        found.append((k, f"the launch with the most ranks ('{text}')"))
    env = _one([(t, k) for t, k in _values(ev, "launcher_ranks") if not t.startswith(_COMMANDS)])
    if env:
        found.append((env[1], f"'{env[0]}'"))
    env_nodes = _one([(t, k) for t, k in _values(ev, "launcher_nodes")
                      if t.startswith("DGXNNODES=")])
    env_gpus = _one([(t, k) for t, k in _values(ev, "launcher_ranks_per_node")
                     if t.startswith("DGXNGPU=")])
    if env_nodes and env_gpus:
        found.append((env_nodes[1] * env_gpus[1], f"'{env_nodes[0]}' x '{env_gpus[0]}'"))
    platforms = ev.loc[ev["key"].astype("object") == "submission_platform", "value"]
    platforms = sorted({str(v) for v in platforms.dropna()})
    nodes = nodes_of(platforms[0]) if len(platforms) == 1 else None
    if nodes is not None:
        each, how = per_node_of(platforms[0])
        if each is not None and nodes * each < _INT64:
            found.append((nodes * each, f"MLPerf submission_platform '{platforms[0]}': "
                                        f"{nodes} nodes x {each} ({how})"))
    if nodes is None and launched and per_node:
        top = max(k for _, k in launched)
        nodes = top // per_node[1] if top % per_node[1] == 0 else None
    if nodes is None:
        said = _one([(t, k) for t, k in _values(ev, "launcher_nodes")
                     if not t.startswith(_COMMANDS)])
        nodes = said[1] if said else None
    if not found:
        return None, None, nodes
    world, why = found[0]
    other = [f"{w_why} says {w}" for w, w_why in found[1:] if w != world]
    return world, why + (f"; but {'; '.join(other)}" if other else ""), nodes


def _first(g: pd.DataFrame, key: str, col: str = "value") -> object:
    rows = g[g["key"] == key]
    return rows[col].iloc[0] if len(rows) else None


def epochs(ev: pd.DataFrame) -> pd.DataFrame:
    """One row per source and complete epoch: ``epoch_num``, ``start_us``, ``stop_us``,
    ``duration_s`` (the first epoch_start and the first epoch_stop of that epoch_num, in
    line order) and ``eval_accuracy`` (the epoch's evaluation, where one was logged)."""
    k = keys(ev, "source")
    cols = [*k, "epoch_num", "start_us", "stop_us", "duration_s", "eval_accuracy"]
    marks = ev[ev["key"].isin(["epoch_start", "epoch_stop"]) & ev["epoch_num"].notna()
               & ev["time_us"].notna()]
    if marks.empty:
        return pd.DataFrame(columns=cols)
    firsts = marks.sort_values("lineno", kind="stable") \
        .drop_duplicates([*k, "key", "epoch_num"])
    wide = firsts.pivot_table(index=[*k, "epoch_num"], columns="key", values="time_us",
                              observed=True, aggfunc="first")
    if "epoch_start" not in wide or "epoch_stop" not in wide:
        return pd.DataFrame(columns=cols)
    wide = wide.dropna(subset=["epoch_start", "epoch_stop"])
    wide = wide[wide["epoch_stop"] >= wide["epoch_start"]].reset_index()
    out = wide.rename(columns={"epoch_start": "start_us", "epoch_stop": "stop_us"})
    out["duration_s"] = (out["stop_us"] - out["start_us"]) / 1e6
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


def _throughput(g: pd.DataFrame, eps: pd.DataFrame, train_samples: object,
                evals: pd.DataFrame | None = None) -> tuple[float | None, str]:
    """The throughput rule of this module on one log's rows ``g`` (``evals``: the rows whose
    evaluations are looked for inside epochs, ``g`` by default)."""
    evals_of = g if evals is None else evals
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
    evals = evals_of.loc[evals_of["key"].isin(["eval_start", "eval_accuracy"]),
                         "time_us"].dropna().to_numpy()
    starts, stops = eps["start_us"].to_numpy(float), eps["stop_us"].to_numpy(float)
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
    ``global_batch_size``, ``train_samples``, ``run_start_us``, ``time_to_train_s`` and
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
        starts = g[(g["key"] == "run_start") & g["time_us"].notna()]
        start = float(starts["time_us"].iloc[0]) if len(starts) else None
        stops = g[(g["key"] == "run_stop") & g["time_us"].notna()]
        if start is not None:
            stops = stops[stops["time_us"] >= start]
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
            "train_samples": train_samples, "run_start_us": start,
            "time_to_train_s": (float(stop["time_us"]) - start) / 1e6
            if stop is not None and start is not None else None,
            "status": stop["status"] if stop is not None else None,
            "epochs": stopped.nunique() if len(stopped) else None,
            "eval_accuracy": float(acc.iloc[-1]) if len(acc) else None,
            "throughput_samples_per_s": rate, "throughput_from": why,
        })
    out = pd.DataFrame(rows, columns=cols)
    for c in ("nodes", "ranks", "epochs"):
        out[c] = out[c].astype("Int64")
    for c in ("global_batch_size", "train_samples", "run_start_us", "time_to_train_s",
              "eval_accuracy", "throughput_samples_per_s"):
        out[c] = out[c].astype("float64")
    return run_first(out, ev)


# ---- the job figure ------------------------------------------------------------------------

#: the trainlog metrics an MLPerf figure (samples per second) is checked against
_CHECK_METRICS = ("samples_per_s", "images_per_s")


def _series(g: pd.DataFrame, key: str) -> pd.DataFrame:
    """The rows of ``key`` of one log printed by one process: the lowest rank's where the
    lines carry ranks (each rank prints its copy), in line order."""
    rows = g[g["key"].astype("object") == key].sort_values("lineno", kind="stable")
    if "rank" in rows and rows["rank"].notna().any():
        rows = rows[rows["rank"] == rows["rank"].min()]
    return rows


def _after_warmup(values: list[float], fraction: float) -> tuple[list[float], int]:
    """The values after warm-up, as the throughput analysis drops it: the first
    ``max(1, floor(fraction * n))`` of n >= 3 (:func:`.throughput.mark_warmup`)."""
    n = len(values)
    drop = max(1, int(np.floor(fraction * n))) if n >= 3 else 0
    return values[drop:], drop


def own_figure(g: pd.DataFrame, fraction: float) -> dict[str, object] | None:
    """The figure one MLPerf log gives of its job's samples per second, by the rules of
    this module (``throughput`` events, else single-number ``tracked_stats``, each the mean
    after warm-up; else the epochs' figure), or None: ``value``, ``value_all_steps``,
    ``how``, ``rule``, ``name``, ``rows``, ``first_lineno``, ``epochs_value`` (the epochs'
    figure, a check) and ``epochs_rule``."""
    printed = _series(g, "throughput")
    printed = printed[printed["value_num"].notna()]
    found: list[float] = [float(v) for v in printed["value_num"]]
    name, lines = "throughput", printed["lineno"]
    if not found:
        tracked = _series(g, "tracked_stats")
        nums = [_single_number(v) for v in tracked["value"]]
        keep = [x is not None for x in nums]
        found = [float(x) for x in nums if x is not None]
        name, lines = "tracked_stats", tracked.loc[keep, "lineno"]
    eps = epochs(g)
    if len(eps) and "epoch_num" in eps:
        eps = eps.drop(columns=[c for c in ("run", "source") if c in eps])
    ep_value, ep_rule = _throughput(g.iloc[0:0], eps, _first(g, "train_samples", "value_num"),
                                    evals=g)
    if found:
        kept, drop = _after_warmup(found, fraction)
        n = len(found)
        what = f"MLPerf :::MLLOG '{name}' events (the benchmark's own figure)"
        if n == 1:
            how, rule = "printed_global", f"{what}: the one printed"
        else:
            how = "steady_global"
            rule = (f"{what}: mean of {len(kept)} after warm-up (first {drop} of {n} dropped)"
                    if drop else f"{what}: mean of {n}")
        return {"value": float(np.mean(kept)), "value_all_steps": float(np.mean(found)),
                "how": how, "rule": rule, "name": name, "rows": n,
                "first_lineno": int(lines.min()), "epochs_value": ep_value,
                "epochs_rule": ep_rule}
    if ep_value is None:
        return None
    marks = g.loc[g["key"].astype("object").isin(["epoch_start", "epoch_stop"]), "lineno"]
    return {"value": ep_value, "value_all_steps": ep_value, "how": "steady_global",
            "rule": f"MLPerf :::MLLOG epochs (no 'throughput' events): {ep_rule[len('epochs: '):]}",
            "name": "epoch_start/epoch_stop", "rows": len(eps),
            "first_lineno": int(marks.min()) if len(marks) else None,
            "epochs_value": None, "epochs_rule": ""}


def _trainlog_check(tp: pd.DataFrame | None, run: object, source: str,
                    fraction: float) -> tuple[str, float] | None:
    """(what, value) of the training-log lines of the same log that print samples or images
    per second (MXNet's Speedometer ``Speed: N samples/sec``): the series with the most
    lines, its mean after warm-up (the sum over its printers where several ranks print)."""
    from ..trainlog import throughput as thr

    if tp is None or tp.empty:
        return None
    mine = tp[(tp["source"].astype("object") == source).to_numpy()
              & tp["metric"].astype("object").isin(_CHECK_METRICS).to_numpy()]
    if "run" in mine and run is not None:
        mine = mine[(mine["run"].astype("object") == run).to_numpy()]
    if "phase" in mine:
        mine = mine[(mine["phase"].astype("object").fillna("train") == "train").to_numpy()]
    if "repeat" in mine:
        mine = mine[~mine["repeat"].fillna(False).astype(bool).to_numpy()]
    if mine.empty:
        return None
    summ = thr.throughput_summary(mine, fraction)
    if summ.empty:
        return None
    best = summ.sort_values("rows", ascending=False, kind="stable").iloc[0]
    several = int(best["instances"]) > 1 and best["scope"] != "global"
    value = float(best["sum"] if several else best["mean"])
    what = (f"'{best['name']}' lines ({best['pattern']}), "
            + (f"sum of {int(best['instances'])} printers" if several else "mean")
            + " after warm-up")
    return what, value


def _close(a: float, b: float) -> bool:
    from ..trainlog.job import AGREE
    return bool(np.isfinite(a) and np.isfinite(b) and abs(a - b) <= AGREE * abs(b))


def _epochs_check(fig: Mapping[str, object], batch: object, value: float,
                  world: int | None) -> tuple[str, float]:
    """(what, value) of the epochs' figure as a check of ``value``: train_samples x epochs /
    their time; where that agrees with neither ``value`` nor ``value`` x the world size but
    train_samples x the global batch does, the log's ``train_samples`` counts iterations
    (Azure's v2.0 SSD logs: 4,572 = 1,170,432 OpenImages samples / 256), and that is the
    check."""
    samples = float(fig["epochs_value"])  # type: ignore[arg-type]
    what = f"MLPerf :::MLLOG {fig['epochs_rule']}"
    try:
        gbs = float(batch)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return what, samples
    scaled = [value] + ([value * world] if world and world > 1 else [])
    if not (np.isfinite(gbs) and gbs > 1) or any(_close(v, samples) for v in scaled):
        return what, samples
    if any(_close(v, samples * gbs) for v in scaled):
        return (f"{what} x global_batch_size {gbs:,.0f} (its train_samples counts "
                "iterations)", samples * gbs)
    return what, samples


def job_rows(ev: pd.DataFrame, tp: pd.DataFrame | None = None,
             runs: pd.DataFrame | None = None, fraction: float = 0.1) -> pd.DataFrame:
    """One job-figure row (:data:`.job.COLUMNS`) per run and MLPerf log that gives its own
    figure (:func:`own_figure`): metric ``samples_per_s``, ``pattern`` ``mllog``, ``scope``
    global. Checked against the same log's training-log lines of samples or images per
    second (``tp``), else against the epochs' figure. Where the check agrees only with the
    figure times the world size (the run's, ``runs``), the events are per device (Azure's
    v2.0 SSD logs): the figure is that product, ``how`` ``rank0_times_world``."""
    from ..trainlog.job import COLUMNS

    if ev is None or ev.empty or "key" not in ev:
        return pd.DataFrame(columns=COLUMNS)
    world: dict[str, int] = {}
    if runs is not None and len(runs) and "world_size" in runs:
        world = {str(r): int(w) for r, w in zip(runs["run"], runs["world_size"], strict=True)
                 if pd.notna(w) and int(w) > 0}
    k = keys(ev, "source")
    out = []
    for key, g in ev.sort_values("lineno", kind="stable").groupby(k, observed=True,
                                                                  sort=False):
        key = key if isinstance(key, tuple) else (key,)
        where = dict(zip(k, key, strict=True))
        run, source = where.get("run"), str(where["source"])
        fig = own_figure(g, fraction)
        if fig is None:
            continue
        w = world.get(str(run)) if run is not None else None
        check = _trainlog_check(tp, run, source, fraction)
        value, how, rule = float(fig["value"]), str(fig["how"]), str(fig["rule"])  # type: ignore[arg-type]
        value_all = float(fig["value_all_steps"])  # type: ignore[arg-type]
        if check is None and fig["epochs_value"] is not None:
            check = _epochs_check(fig, _first(g, "global_batch_size", "value_num"), value, w)
        if check is not None and w and w > 1 and not _close(value, check[1]) \
                and _close(value * w, check[1]):
            rule = (f"{rule}, per device (x world size {w} agrees with {check[0]}: "
                    f"{value:,.1f} x {w})")
            value, value_all, how = value * w, value_all * w, "rank0_times_world"
        out.append({
            "run": run, "input": os.path.basename(source) or source, "metric": "samples_per_s",
            "value": value, "how": how, "rule": rule, "ranks": f"all {w}" if w else "all",
            "printers": 1, "world_size": w, "source": source, "pattern": "mllog",
            "name": fig["name"], "label": None, "scope": "global", "rows": fig["rows"],
            "value_all_steps": value_all, "copies_agree": True,
            "check_name": check[0] if check else None,
            "check_value": check[1] if check else None, "check_range": None,
            "check_agrees": _close(value, check[1]) if check else None,
            "first_lineno": fig["first_lineno"],
        })
    df = pd.DataFrame(out, columns=COLUMNS)
    if "run" not in ev:
        df = df.drop(columns="run")
    return run_first(df, ev)


def with_job_figures(job: pd.DataFrame, ev: pd.DataFrame | None,
                     tp: pd.DataFrame | None = None, runs: pd.DataFrame | None = None,
                     fraction: float = 0.1) -> pd.DataFrame:
    """``job`` (:func:`.job.job_figures`) with each MLPerf log's own figure
    (:func:`job_rows`) as its run's headline: it replaces the training-log row of
    ``samples_per_s`` of the same log (whose lines are then its check); other rows stay."""
    mine = job_rows(ev, tp, runs, fraction) if ev is not None else pd.DataFrame()
    if mine.empty:
        return job
    if job is None or job.empty:
        return mine.reset_index(drop=True)
    has_run = "run" in job and "run" in mine
    taken = set(zip(mine["run"].astype(str) if has_run else [""] * len(mine),
                    mine["source"].astype(str), strict=True))
    run_of = job["run"].astype(str) if has_run else pd.Series("", index=job.index)
    replaced = [(r, str(s)) in taken and m == "samples_per_s" for r, s, m in
                zip(run_of, job["source"].astype(object), job["metric"].astype(object),
                    strict=True)]
    rest = job[~np.asarray(replaced, dtype=bool)]
    both = pd.concat([mine.astype(object), rest.astype(object)], ignore_index=True)
    if has_run:
        order = list(dict.fromkeys([*job["run"].astype(str), *mine["run"].astype(str)]))
        if runs is not None and len(runs) and "run" in runs:
            known = [str(r) for r in runs["run"]]
            order = [r for r in known if r in set(order)] + [r for r in order if r not in known]
        place = {r: i for i, r in enumerate(order)}
        both = both.assign(_o=both["run"].astype(str).map(place)) \
            .sort_values("_o", kind="stable").drop(columns="_o")
    out = both.reset_index(drop=True)
    for c in job.columns:   # the job table's dtypes
        with contextlib.suppress(TypeError, ValueError):
            out[c] = out[c].astype(job[c].dtype)
    return run_first(out, job) if has_run else out
