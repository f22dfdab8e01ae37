"""Terminal face of the report, drawn with rich."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
from rich.bar import Bar
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from .model import Report, Section

#: series shown in full; the rest are listed in one line (all are in --json)
MAX_SERIES = 12
#: instances drawn per series before eliding the middle
MAX_INSTANCES = 32


def render(report: Report, console: Console) -> None:
    """Print every section of ``report`` to ``console``."""
    for section in report.sections:
        drawer = _DRAWERS.get(section.name, _draw_generic)
        console.print(drawer(section))


def fmt(value: object, digits: int = 2) -> str:
    """A number for humans: thousands separators; small values keep 3 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "-"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if value != 0 and abs(value) < 1:
        return f"{value:.3g}"
    return f"{value:,.{digits + 1 if abs(value) < 10 else digits}f}"


def _draw_inputs(section: Section) -> RenderableType:
    src = section.tables["sources"]
    table = Table(title=section.title, title_justify="left", caption=section.caption,
                  caption_justify="left")
    for col in ("input", "format", "variant", "status", "rows", "message"):
        table.add_column(col, overflow="fold", justify="right" if col == "rows" else "left")
    styles = {"ok": "green", "partial": "yellow", "empty": "yellow"}
    for r in src.itertuples(index=False):
        status = Text(str(r.status), style=styles.get(str(r.status), "red"))
        table.add_row(Text(str(r.source)), Text(_s(r.format)), Text(_s(r.variant)), status,
                      fmt(r.rows), Text(_s(r.message)))
    return table


def _draw_throughput(section: Section) -> RenderableType:
    summary, inst = section.tables["summary"], section.tables["instances"]
    order = summary.assign(_tqdm=summary["pattern"] == "tqdm").sort_values(
        ["_tqdm", "source"], kind="stable")
    parts: list[RenderableType] = [Text(section.title, style="bold"), Text(section.caption,
                                                                          style="dim")]
    for _, row in order.head(MAX_SERIES).iterrows():
        parts.append(_series_panel(row, _instances_of(inst, row)))
    if len(order) > MAX_SERIES:
        parts.append(Text(f"... and {len(order) - MAX_SERIES} more series (tqdm bars and others);"
                          " see --json for all", style="dim"))
    return Group(*parts)


def _instances_of(inst: pd.DataFrame, row: pd.Series) -> pd.DataFrame:
    mask = pd.Series(True, index=inst.index)
    for col in ("source", "pattern", "name", "label", "metric", "scope"):
        mask &= inst[col].isna() if pd.isna(row[col]) else inst[col] == row[col]
    return inst[mask]


def _series_panel(row: pd.Series, inst: pd.DataFrame) -> RenderableType:
    label = f" [{row['label']}]" if isinstance(row["label"], str) else ""
    title = Text.assemble((f"{row['name']}{label}", "bold cyan"),
                          f"  {row['metric']} · scope {row['scope']} · {row['pattern']}")
    body: list[RenderableType] = []
    if not _identical_copies(row):
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
    top = float(inst["value"].max()) if inst["value"].notna().any() else 0.0
    shown = _elide(inst)
    for r in shown.itertuples(index=False):
        if r.instance is None:
            table.add_row("…", "", "", "", "", "")
            continue
        style = "bold red" if r.straggler else ""
        bar = Bar(size=top or 1.0, begin=0, end=float(r.value) if pd.notna(r.value) else 0,
                  width=28, color="red" if r.straggler else "green")
        steps = f"{r.rows} ({r.warmup_rows} warm-up)" if r.warmup_rows else str(r.rows)
        table.add_row(Text(str(r.instance), style=style), Text(fmt(r.value), style=style), bar,
                      steps, _vs_median(r.below_median_pct), fmt(r.first_lineno))
    return table


def _vs_median(below_pct: object) -> str:
    if not isinstance(below_pct, (int, float)) or math.isnan(below_pct):
        return "-"
    return f"{-below_pct:+.1f}%" if abs(below_pct) >= 0.05 else "0.0%"


def _elide(inst: pd.DataFrame) -> pd.DataFrame:
    if len(inst) <= MAX_INSTANCES:
        return inst
    slow = inst.nsmallest(MAX_INSTANCES // 2, "value").index
    keep = inst.loc[inst.index.isin(slow) | (inst.index < inst.index[MAX_INSTANCES // 4])]
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


def _draw_problems(section: Section) -> RenderableType:
    probs = section.tables["problems"]
    table = Table(title=section.title, title_justify="left", caption=section.caption,
                  caption_justify="left")
    for col in ("where", "severity", "message"):
        table.add_column(col, overflow="fold")
    for r in probs.itertuples(index=False):
        where = f"{r.source}:{r.line}" if pd.notna(r.line) else str(r.source)
        table.add_row(Text(where), Text(str(r.severity),
                                        style="red" if r.severity == "error" else "yellow"),
                      Text(str(r.message)))
    return table


def _draw_generic(section: Section) -> RenderableType:
    parts: list[RenderableType] = [Text(section.title, style="bold")]
    for name, df in section.tables.items():
        table = Table(title=name, title_justify="left")
        for col in df.columns:
            table.add_column(str(col))
        for r in df.head(50).itertuples(index=False):
            table.add_row(*[Text(fmt(v)) for v in r])
        parts.append(table)
    return Group(*parts)


def _s(value: object) -> str:
    return "" if value is None or value is pd.NA or (isinstance(value, float) and
                                                      math.isnan(value)) else str(value)


def _drawers() -> dict[str, Callable[[Section], RenderableType]]:
    from .horovod_sections import DRAWERS as HOROVOD_DRAWERS
    from .mpi_sections import DRAWERS as MPI_DRAWERS
    from .tiles_sections import draw_tiles

    return {"inputs": _draw_inputs, "throughput": _draw_throughput, **MPI_DRAWERS,
            **HOROVOD_DRAWERS, "tiles": draw_tiles, "problems": _draw_problems}


_DRAWERS = _drawers()
