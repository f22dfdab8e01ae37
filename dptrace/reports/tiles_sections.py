"""The SambaNova tiles section: a heatmap of XRDU x RDU x TILE, instances, idle tiles."""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..analysis import tiles as tl
from ..dataset import Dataset
from .model import Section


def tiles_section(ds: Dataset, opts: dict) -> Section | None:
    tiles = ds["tiles"]
    if tiles.empty:
        return None
    return Section(
        "tiles", "SambaNova tiles",
        "Each cell is one tile: its mean %exec over the snapshots, and the instance (#n, one "
        "PID of the data-parallel job) that owns it. Instances list their tiles and how busy "
        "they kept them; load overhead is %pload + %aload + %chkpt. Idle tiles never ran work.",
        {
            "overview": tl.overview(tiles),
            "grid": tl.grid(tiles),
            "instances": tl.instances(tiles),
            "idle_tiles": tl.idle_tiles(tiles),
            "exec_series": tl.exec_series(tiles),
        },
        figure_fn=partial(_tiles_figures, tiles=tiles),
    )


def _tiles_figures(section: Section, tiles: pd.DataFrame) -> dict:
    from .figures_tiles import tiles_figures

    return tiles_figures(section.tables, tiles)


def draw_tiles(section: Section) -> RenderableType:
    t = section.tables
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    for row in t["overview"].itertuples(index=False):
        src = str(row.source)
        parts.append(Text(f"\n{src}: {row.snapshots} snapshot(s), {row.tiles} tiles, "
                          f"{row.instances} instance(s), {row.busy_tiles} busy in the last "
                          f"snapshot", style="bold"))
        grid = t["grid"][t["grid"]["source"] == src]
        parts.append(_heatmap(grid))
        inst = t["instances"]
        if len(inst):  # instance numbers are per source: two captures can share PIDs
            parts.append(_instances(inst[inst["source"] == src], grid))
        parts.extend(_warnings(row, t["idle_tiles"], inst))
    return Group(*parts)


def _heatmap(grid: pd.DataFrame) -> Table:
    ntiles = int(grid["tile"].max()) + 1
    table = Table(show_lines=False, pad_edge=False, box=None)
    table.add_column("XRDU/RDU", style="bold")
    for k in range(ntiles):
        table.add_column(f"TILE_{k}", justify="center")
    for (x, r), g in grid.groupby(["xrdu", "rdu"], sort=True):
        cells: list[Text | str] = [""] * ntiles
        for c in g.itertuples(index=False):
            label = f"#{c.instance}" if pd.notna(c.instance) else "idle"
            cells[int(c.tile)] = Text(f"{c.exec_mean_pct:5.1f} {label}",
                                      style=_heat(float(c.exec_mean_pct), pd.isna(c.pid)))
        table.add_row(f"{x}/{r}", *cells)
    return table


def _heat(exec_pct: float, idle: bool) -> str:
    if idle:
        return "dim"
    if exec_pct >= 80:
        return "black on green"
    if exec_pct >= 50:
        return "black on yellow"
    return "white on red"


def _instances(inst: pd.DataFrame, grid: pd.DataFrame) -> Table:
    numbers = dict(zip(grid["pid"], grid["instance"], strict=True))
    rows = [(f"#{numbers.get(r.pid, '?')}", str(r.pid), str(r.user or ""), str(r.tiles),
             str(r.rdu_list), f"{r.exec_mean_pct:.1f}%", f"{r.exec_min_pct:.1f}%",
             f"{r.pload_mean_pct:.1f}%", f"{r.aload_mean_pct:.1f}%", f"{r.chkpt_mean_pct:.1f}%",
             str(r.command or "")) for r in inst.itertuples(index=False)]
    lowest = (inst["lowest"].astype(bool) & (len(inst) > 1)).tolist()
    table = Table(box=None, pad_edge=False)
    names = ("#", "PID", "user", "tiles", "RDUs", "exec mean", "exec min", "pload", "aload",
             "chkpt", "command")
    for k, col in enumerate(names):
        # on a narrow terminal the command gives way; the other cells stay whole
        width = 10 if col == "command" else max((len(row[k]) for row in rows), default=1)
        table.add_column(col, justify="left" if col in ("user", "command", "RDUs") else "right",
                         overflow="ellipsis", no_wrap=col == "command", max_width=40,
                         min_width=min(width, 12 if col == "user" else 40))
    for cells, low in zip(rows, lowest, strict=True):
        styles = ["bold red" if low and k == 5 else "" for k in range(len(cells))]
        table.add_row(*(Text(c, style=st) for c, st in zip(cells, styles, strict=True)))
    return table


def _warnings(row: Any, idle: pd.DataFrame, inst: pd.DataFrame) -> list[RenderableType]:
    src = row.source
    out: list[RenderableType] = []
    always = idle[(idle["source"] == src) & idle["always_idle"]]
    if len(always):
        out.append(Text(f"warning: {len(always)} tile(s) idle in every snapshot", style="yellow"))
    mine = inst[inst["source"] == src] if len(inst) else inst
    if len(mine) > 1:
        low = mine[mine["lowest"]].iloc[0]
        out.append(Text(f"lowest %exec: PID {low['pid']} at {low['exec_mean_pct']:.1f}% "
                        f"(instances' median {mine['exec_mean_pct'].median():.1f}%)",
                        style="yellow"))
    return out
