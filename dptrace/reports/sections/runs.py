"""The sections of the compare and scaling reports (views ``compare`` and ``scaling``).

Both are made from the ordinary report of a Dataset that holds the runs (``opts["report"]``,
built by :func:`dptrace.reports.model.build`), so every number compared is the number the
ordinary report shows for that run.

- ``compare`` (``dptrace compare BASE CANDIDATE``): tables ``changes`` (the ten largest
  changes in time), ``compare`` (every compared row: ``table``, ``key``, ``metric``,
  ``base``, ``candidate``, ``change``, ``change_pct``, ...), ``ranks`` (communication time
  per rank, both runs) and ``message_sizes`` (time per rank per size bin, both runs).
  Options: ``base`` and ``candidate`` (run ids; default the first two runs).
- ``scaling`` (``dptrace scaling RUN RUN ...``): tables ``scaling`` (one row per run and
  metric: workers, job throughput, speedup, efficiency, communication), and one column
  per run for what may grow with the number of workers: ``routines`` (MPI time per rank
  per routine), ``message_sizes`` (per size bin), ``horovod`` (negotiation and allreduce
  shares of the timeline), ``tiles`` (SambaNova %exec and load). Options: ``by`` (ranks,
  nodes, instances) and ``strong``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from ...analysis import compare as cmp
from ...analysis import scaling as scl
from ...dataset import Dataset
from ...errors import DptraceError
from ...findings import runs as rules
from ..model import Report, Section
from ..registry import SectionSpec, register_section


def pair(ds: Dataset, opts: Mapping[str, Any]) -> tuple[str, str]:
    """The base and candidate run ids of a comparison (default: the first two runs)."""
    ids = ds.run_ids
    base, cand = opts.get("base"), opts.get("candidate")
    if base is None or cand is None:
        if len(ids) != 2:
            raise DptraceError(
                f"a comparison needs two runs, the inputs make {len(ids)}"
                + (f" ({', '.join(ids)})" if ids else "")
                + ": give one path (or LABEL=PATH[,PATH...]) per run")
        return ids[0], ids[1]
    for r in (base, cand):
        if r not in ids:
            raise DptraceError(f"no run {r!r}; runs: {', '.join(ids)}")
    return str(base), str(cand)


def names(ds: Dataset, runs: Sequence[str]) -> list[str]:
    """What each run is called in column headers and messages: its label, or its id where
    two runs share a label."""
    label = dict(zip(ds.runs["run"].astype(str), ds.runs["label"].astype(str), strict=True))
    out = [label.get(r, r) for r in runs]
    return out if len(set(out)) == len(out) else list(runs)


def _inner(opts: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    report: Report = opts["report"]
    return report.tables


def _table(ds: Dataset, name: str) -> pd.DataFrame | None:
    return ds[name] if name in ds.tables else None


def _getter(ds: Dataset) -> Callable[[str], pd.DataFrame | None]:
    """``table(name)``: the Dataset's table or None (what the formats' declarations read)."""
    return lambda name: _table(ds, name)


def setup_table(ds: Dataset, runs: Sequence[str]) -> pd.DataFrame:
    """The setup of ``runs`` side by side (:func:`dptrace.analysis.compare.setup`)."""
    return cmp.setup(ds.runs, cmp.stated(_getter(ds)), cmp.batches(_getter(ds)),
                     list(runs), names(ds, runs))


def _view_runs(ds: Dataset, opts: Mapping[str, Any]) -> list[str]:
    """The runs of the view in its order: base and candidate, or fewest workers first."""
    if opts.get("view") == "compare":
        return list(pair(ds, opts))
    return [r for r in scl.run_order(scaling_table(ds, opts), ds.run_ids)
            if r in set(ds.run_ids)]


def build_setup(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    table = setup_table(ds, _view_runs(ds, opts))
    if table.empty:
        return None
    return Section(
        SETUP.name, SETUP.title,
        "What each run's setup is, one row per setting, one column per run: the layout (the "
        "runs table), the global batch per step (Megatron's iteration lines), what NCCL chose "
        "(its NCCL_DEBUG=INFO lines: version, the network between nodes, plugin and "
        "libfabric provider, the channels' transports, GPUDirect RDMA over the processes "
        "with network channels) and each NCCL_* / HOROVOD_* variable the logs state. "
        "'changed': two runs state different values ('not stated': a run whose NCCL lines "
        "do not print that variable; '-': the run's inputs do not say).",
        {"setup": table})


def build_compare(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    base, cand = pair(ds, opts)
    nb, nc = names(ds, [base, cand])
    tables = _inner(opts)
    table = cmp.compare(tables, base, cand)
    return Section(
        COMPARE.name, f"{COMPARE.title}: {nb} -> {nc}",
        f"Every report table both runs have, row by row: base {nb}, candidate {nc}; change = "
        "candidate - base in the metric's unit, change_pct of the base. Rows match by what "
        "they are (routine, size bin, rank, activity, series and instance), never by file "
        "or job id. 'changes' keeps the ten largest changes in time from the most specific "
        "tables (MPI size bins, else routines; Horovod activities, else the timeline), so no "
        "second is counted twice; a key only one run has counts as 0 in the other for "
        "times, calls and bytes.",
        {"changes": cmp.largest_changes(table), "compare": table,
         **cmp.wides(tables, "compare", [base, cand], [nb, nc], empty=True)},
        figure_args={"base": nb, "candidate": nc})


def scaling_table(ds: Dataset, opts: Mapping[str, Any]) -> pd.DataFrame:
    """The scaling table of ``ds``; a run the command line named (``opts["expected"]``)
    that gave no data is a row that says so."""
    table = scl.scaling(_inner(opts), ds.runs, by=str(opts.get("by") or "ranks"),
                        strong=bool(opts.get("strong")), batches=cmp.batches(_getter(ds)))
    ids = set(ds.run_ids)
    lost = [label for label in opts.get("expected") or () if label not in ids]
    if lost:
        extra = pd.DataFrame([{"run": label, "label": label,
                               "workers": scl.stated_workers(label),
                               "mode": "strong" if opts.get("strong") else "weak",
                               "missing": "any input (nothing was read: see Problems)",
                               "note": ""} for label in lost], columns=table.columns)
        table = pd.concat([table, extra], ignore_index=True).astype(table.dtypes.to_dict())
    return table


def build_scaling(ds: Dataset, opts: Mapping[str, Any]) -> Section | None:
    tables = _inner(opts)
    by = str(opts.get("by") or "ranks")
    table = scaling_table(ds, opts)
    order = [r for r in scl.run_order(table, ds.run_ids) if r in set(ds.run_ids)]
    cols = names(ds, order)
    per_run = cmp.wides(tables, "scaling", order, cols)
    mode = "strong" if opts.get("strong") else "weak"
    return Section(
        SCALING.name, SCALING.title,
        f"One row per run and metric, fewest {by} first. {mode.capitalize()} scaling: "
        "against the run with the fewest workers that has the metric, speedup = R(N)/R(N0) "
        "of a rate (better higher) and T(N0)/T(N) of a time (the step time: better lower), "
        "ideal = N/N0, efficiency = speedup/ideal for a rate; a step time is not a rate, so "
        "its efficiency is the rate global batch/T against the base's, over the ideal, and "
        "only where both runs print their global batch per step (else efficiency_note says "
        "why)"
        + (" (strong: the global batch is fixed, so the throughput is the global figure "
           "and 1 means time to solution fell with the workers)" if mode == "strong" else
           " (weak: the work per worker is fixed, so the ideal throughput grows with N)")
        + ". Communication: MPI time per rank and its share of elapsed (mpitrace), else "
        "the Horovod collective time. The tables below hold one column per run: the cost "
        "that grows with N shows as a row that grows to the right.",
        {"scaling": table, **per_run},
        figure_args={"by": by})


def findings(ds: Dataset, opts: Mapping[str, Any]) -> pd.DataFrame:
    """The findings of the compare or scaling view (``opts["view"]``)."""
    tables = _inner(opts)
    thresholds = opts.get("thresholds") or {}
    run: str | None
    if opts.get("view") == "compare":
        base, cand = pair(ds, opts)
        nb, nc = names(ds, [base, cand])
        table = cmp.compare(tables, base, cand)
        batches = cmp.batches(_getter(ds))
        out = rules.compare_findings(
            table, cmp.largest_changes(table), nb, nc, thresholds,
            setup=setup_table(ds, [base, cand]),
            batches=(batches.get(base, (None, ""))[0], batches.get(cand, (None, ""))[0]))
        run = cand
    else:
        by = str(opts.get("by") or "ranks")
        table = scaling_table(ds, opts)
        order = [r for r in scl.run_order(table, ds.run_ids) if r in set(ds.run_ids)]
        growth = cmp.growth(tables, order)
        out = rules.scaling_findings(table, growth, by, thresholds)
        run = order[-1] if order else None
    if len(out):   # about the runs together: filed under the candidate / the largest run
        out["run"] = pd.Categorical([run] * len(out), categories=ds.run_ids)
    return out


COMPARE = register_section(SectionSpec(
    "compare", "Compare", order=20, build=build_compare, views=("compare",),
    figures="dptrace.reports.runs_figures:compare_figures",
    terminal="dptrace.reports.terminal.runs:draw_compare"))
SETUP = register_section(SectionSpec(
    "setup", "Setup", order=15, build=build_setup, views=("compare", "scaling"),
    terminal="dptrace.reports.terminal.runs:draw_setup"))
SCALING = register_section(SectionSpec(
    "scaling", "Scaling", order=20, build=build_scaling, views=("scaling",),
    figures="dptrace.reports.runs_figures:scaling_figures",
    terminal="dptrace.reports.terminal.runs:draw_scaling"))
