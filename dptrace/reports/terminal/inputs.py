"""The rich drawer of the Inputs section: one row per input file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.console import Group, RenderableType
from rich.text import Text

from ..fit import KEY, PATH, TEXT, Col, FitTable, common_dir, fold
from ..fmt import fmt, text
from ..model import Section
from .generic import under

#: inputs table, when it does not fit (see :mod:`dptrace.reports.fit`): format, variant and
#: message wrap, then the variant is hidden, then the paths (relative to the directory all
#: inputs share, named once in the title) fold, then rows and format are hidden. An empty
#: variant or message column is left out.
INPUT_DROP = ("variant", fold("input"), "rows", "format")


def draw_inputs(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    """The inputs table (with a run column when there are several runs), then what is
    known of the runs: one line for a single run, a table for several."""
    src = section.tables["sources"]
    runs = section.tables.get("runs")
    # a run column when the inputs belong to several runs (runs split off inside one file
    # have no input of their own: the runs table below lists them)
    several = runs is not None and len(runs) > 1 and "run" in src and \
        src["run"].astype("object").nunique(dropna=True) > 1
    prefix, names = common_dir(src["source"].astype(str))
    rows: list[tuple[str | Text, ...]] = [
        (name, _breakable(text(r.format)), _breakable(text(r.variant)), str(r.status),
         fmt(int(r.rows)) if pd.notna(r.rows) else "-", text(r.message))
        for name, r in zip(names, src.itertuples(index=False), strict=True)]
    if several:
        rows = _under_runs(rows, src["run"], src["status"], runs)
    cols = [Col("input", PATH), Col("format", TEXT), Col("variant", TEXT),
            Col("status", KEY), Col("rows"), Col("message", TEXT, floor=16)]
    keep = [k for k, col in enumerate(cols) if
            col.kind != TEXT or col.name == "format" or any(row[k] for row in rows)]
    table = FitTable([cols[k] for k in keep], [d for d in INPUT_DROP if d.removeprefix(
                         "fold:") in {cols[k].name for k in keep}],
                     title=under(section.title, prefix), caption=section.caption, boxed=True)
    styles = {"ok": "green", "partial": "yellow", "empty": "yellow", "skipped": "dim"}
    for row in rows:
        cells: list[str | Text] = list(row)
        if isinstance(row[3], str) and row[3]:
            cells[3] = Text(row[3], style=styles.get(row[3], "red"))
        table.add_row(*[cells[k] for k in keep])
    if runs is None or runs.empty:
        return table
    if len(runs) == 1:
        line = _run_line(runs.iloc[0])
        return Group(table, Text(line, style="dim")) if line else table
    return Group(table, _runs_table(runs))


def _under_runs(rows: list[tuple[str | Text, ...]], run_of: pd.Series, status: pd.Series,
                runs: pd.DataFrame) -> list[tuple[str | Text, ...]]:
    """The input rows grouped under their run, in the runs' order: a run of one input named
    as its run is one row; any other run a line with its name, its inputs indented below
    (no run column: long names keep their width). Files nothing recognised come last, in no
    run's group (they are no run's input)."""
    order = {str(r): k for k, r in enumerate(runs["run"].astype(str))}
    groups: dict[str, list[tuple[str | Text, ...]]] = {}
    skipped: list[tuple[str | Text, ...]] = []
    for row, run, st in zip(rows, run_of.astype("object"), status.astype("object"),
                            strict=True):
        if st == "skipped":
            skipped.append(row)
        else:
            groups.setdefault("" if pd.isna(run) else str(run), []).append(row)
    out: list[tuple[str | Text, ...]] = []
    for run in sorted(groups, key=lambda r: order.get(r, len(order))):
        members = groups[run]
        if len(members) == 1 and str(members[0][0]).rstrip("/").endswith(run):
            out.extend(members)
            continue
        out.append((Text(f"run {text(run)}", style="bold"), "", "", "", "", ""))
        out.extend(("  " + str(m[0]), *m[1:]) for m in members)
    return out + skipped


def _run_line(run: pd.Series) -> str:
    """'run polaris_job: job 359819, 8 ranks (mpitrace nranks) on 2 nodes, srun'; empty
    when nothing is known beyond its name."""
    facts = []
    if pd.notna(run["job_id"]):
        facts.append(f"job {run['job_id']}")
    if pd.notna(run["world_size"]):
        where = f" ({run['world_size_from']})" if pd.notna(run["world_size_from"]) else ""
        nodes = f" on {fmt(int(run['nodes']))} nodes" if pd.notna(run["nodes"]) else ""
        facts.append(f"{fmt(int(run['world_size']))} ranks{where}{nodes}")
    elif pd.notna(run["world_size_from"]):
        facts.append(f"world size unknown: {run['world_size_from']}")
    if pd.notna(run["launcher"]):
        facts.append(str(run["launcher"]))
    return f"run {run['run']}: " + ", ".join(facts) if facts else ""


#: runs table, when it does not fit: where the world size came from folds, then goes
RUNS_DROP = ("from", "launcher", "job")


def _runs_table(runs: pd.DataFrame) -> FitTable:
    cols = [Col("run", PATH), Col("inputs"), Col("world size"), Col("nodes"), Col("job", KEY),
            Col("launcher", TEXT), Col("from", TEXT, floor=16)]
    table = FitTable(cols, RUNS_DROP, title="Runs", boxed=True)
    for r in runs.itertuples(index=False):
        table.add_row(text(r.run), fmt(int(r.sources)),
                      fmt(int(r.world_size)) if pd.notna(r.world_size) else "-",
                      fmt(int(r.nodes)) if pd.notna(r.nodes) else "-", text(r.job_id),
                      text(r.launcher), text(r.world_size_from))
    return table


def _breakable(value: str) -> str:
    """'sntilestat+trainlog' -> 'sntilestat + trainlog', so a narrow column wraps it whole."""
    return value.replace("+", " + ")
