"""The rich drawer of the SambaNova tiles section: per listing, the tile heatmap, the
instances and the warnings (the section and its tables: :mod:`.sections`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from ...reports.fit import KEY, TEXT, Col, FitTable
from ...reports.fmt import percent, text
from ...reports.model import Section
from . import compute as tl

#: the instances table, when it does not fit the terminal (see :mod:`dptrace.reports.fit`):
#: the command wraps down to 16 columns, then these are hidden, first named first; the
#: instance number, PID and tiles never are, and no cell is cut. A command that every
#: instance shares is said once, under the table, instead of in a column.
INSTANCE_DROP = ("chkpt", "aload", "pload", "command", "exec min", "RDUs", "user")


def draw_tiles(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
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
        mine = inst[inst["source"] == src] if len(inst) else inst
        if len(mine):  # instance numbers are per source: two captures can share PIDs
            parts.append(_instances(mine, grid))
        parts.extend(_warnings(row, t["idle_tiles"], inst))
    return Group(*parts)


def _heatmap(grid: pd.DataFrame) -> Heatmap:
    columns = tl.tile_columns(grid)   # the tiles that exist: TILE_20000000 is one column
    where = {t: i for i, t in enumerate(columns)}
    rows = []
    for (x, r), g in grid.groupby(["xrdu", "rdu"], sort=True):
        cells: list[tuple[str, str, str] | None] = [None] * len(columns)
        for c in g.itertuples(index=False):
            label = f"#{c.instance}" if pd.notna(c.instance) else "idle"
            cells[where[int(c.tile)]] = (f"{c.exec_mean_pct:.1f}", label,
                                         _heat(float(c.exec_mean_pct), pd.isna(c.pid)))
        rows.append((f"{x}/{r}", cells))
    return Heatmap(columns, rows)


class Heatmap:
    """The XRDU/RDU x TILE grid, laid out for the width it gets.

    Each cell is "%exec #instance" on one line when the grid fits so, else %exec over the
    instance; when even that is too wide, the tiles are drawn in several stacked grids
    (TILE_0-3, then TILE_4-7), so no tile name or cell is ever cut.
    """

    def __init__(self, columns: list[int],
                 rows: list[tuple[str, list[tuple[str, str, str] | None]]]):
        #: the tile numbers of the columns; a row's cells are by position in it
        self.columns, self.rows = columns, rows
        self.ntiles = len(columns)

    def _table(self, tiles: range, two_lines: bool, width: int) -> Table:
        table = Table(show_lines=False, pad_edge=False, box=None)
        table.add_column("XRDU/RDU", style="bold", no_wrap=True)
        for k in tiles:
            table.add_column(f"TILE_{self.columns[k]}", justify="center", no_wrap=True,
                             width=width)
        for label, cells in self.rows:
            out: list[Text | str] = []
            for k in tiles:
                c = cells[k]
                out.append("" if c is None else
                           Text(f"{c[0]}\n{c[1]}" if two_lines else f"{c[0]:>5} {c[1]}",
                                style=c[2]))
            table.add_row(label, *out)
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        filled = [c for _, cells in self.rows for c in cells if c is not None]
        name = max((len(f"TILE_{t}") for t in self.columns), default=6)
        one = max([name, *(6 + len(c[1]) for c in filled)])
        two = max([name, *(max(len(c[0]), len(c[1])) for c in filled)])
        first = max([len("XRDU/RDU"), *(len(label) for label, _ in self.rows)])
        avail = options.max_width
        if first + self.ntiles * (one + 2) <= avail:
            yield self._table(range(self.ntiles), False, one)
            return
        per = max(1, (avail - first) // (two + 2))
        chunks = -(-self.ntiles // per)
        per = -(-self.ntiles // chunks)                 # as even as the width allows
        for start in range(0, self.ntiles, per):
            yield self._table(range(start, min(start + per, self.ntiles)), True, two)


def _heat(exec_pct: float, idle: bool) -> str:
    if idle:
        return "dim"
    if exec_pct >= 80:
        return "black on green"
    if exec_pct >= 50:
        return "black on yellow"
    return "white on red"


def _instances(inst: pd.DataFrame, grid: pd.DataFrame) -> RenderableType:
    numbers = dict(zip(grid["pid"], grid["instance"], strict=True))
    commands = {text(r.command) for r in inst.itertuples(index=False)}
    one_command = len(commands) == 1            # then said once, under the table
    rows = [(f"#{numbers.get(r.pid, '?')}", str(r.pid), text(r.user), str(r.tiles),
             str(r.rdu_list), percent(r.exec_mean_pct), percent(r.exec_min_pct),
             percent(r.pload_mean_pct), percent(r.aload_mean_pct), percent(r.chkpt_mean_pct),
             text(r.command)) for r in inst.itertuples(index=False)]
    lowest = (inst["lowest"].astype(bool) & (len(inst) > 1)).tolist()
    cols = [Col("#", KEY, "right"), Col("PID", KEY, "right"), Col("user", KEY), Col("tiles"),
            Col("RDUs", KEY), Col("exec mean"), Col("exec min"), Col("pload"), Col("aload"),
            Col("chkpt"), Col("command", TEXT, floor=16)]
    if one_command:
        cols.pop()
    table = FitTable(cols, [d for d in INSTANCE_DROP if d != "command" or not one_command],
                     pad_edge=False)
    for cells, low in zip(rows, lowest, strict=True):
        styles = ["bold red" if low and k == 5 else "" for k in range(len(cols))]
        table.add_row(*(Text(c, style=st) for c, st in zip(cells, styles, strict=False)))
    command = commands.pop() if one_command else ""
    if not command:
        return table
    line = Table.grid(padding=(0, 1))       # a long command wraps under itself
    line.add_column(style="bold", no_wrap=True)
    line.add_column(style="dim", overflow="fold")
    line.add_row("command", Text(command))
    return Group(table, line)


def _warnings(row: Any, idle: pd.DataFrame, inst: pd.DataFrame) -> list[RenderableType]:
    src = row.source
    out: list[RenderableType] = []
    mine = inst[inst["source"] == src] if len(inst) else inst
    if len(mine) > 1:
        low = mine[mine["lowest"]].iloc[0]
        out.append(Text(f"lowest %exec: PID {low['pid']} at {low['exec_mean_pct']:.1f}% "
                        f"(instances' median {mine['exec_mean_pct'].median():.1f}%)",
                        style="yellow"))
    return out
