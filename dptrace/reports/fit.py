"""Terminal tables that fit the width they are given: identifiers stay whole, the rest gives way.

rich shrinks every column of a table that is too wide by the same amount and cuts cells with
"…": at 80 columns MPI_Gather and MPI_Gatherv both became "MPI_Gat…" and headers "til…". A
:class:`FitTable` lays its columns out itself, when it is drawn, for the width it gets (the
console's, or the inside of a panel):

1. every column starts at its natural width (its widest cell, its header on one line);
2. when that is too wide, each column may shrink to its minimum: key and number columns
   (:data:`KEY`, :data:`NUM`: MPI routines, ranks, hosts, PIDs, instances, tiles, activities,
   sizes, times) only as far as their widest cell: their header wraps at its spaces
   ("time/rank" over "s") but no cell is ever cut or wrapped. Free text (:data:`TEXT`:
   commands, messages, variants) wraps at its spaces to a floor (a word longer than the
   column folds), names shortened from the left (:data:`SHORT`, tensor names:
   "…gradients_AddN_5_0") to a floor, bars (:data:`BAR`) to a few cells. Paths
   (:data:`PATH`) stay whole for now;
3. when even that is too wide, the table's drop order (a module-level ``*_DROP`` tuple next
   to each table, least important first) is followed step by step until the table fits:
   each step hides a whole column, or (``fold("input")``) lets a path column fold from then
   on (paths not named fold after the last step). A dim line under the table names the
   hidden columns and the ``--width`` that shows them (``--json`` has every column). A
   column hidden early comes back if a later step made room for it;
4. what room is left goes back, in this order: headers to one line, paths, text,
   shortened names, bars.

Every table of the terminal report fits 60 columns this way. Narrower than that a table
may still not fit; it then falls back to rich's even shrinking with every cell folding, so
cells wrap onto more lines but never lose characters to "…".
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich import box as rich_box
from rich.bar import Bar
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

#: column kinds (see the module docstring)
KEY, NUM, TEXT, PATH, SHORT, BAR = "key", "num", "text", "path", "short", "bar"
#: the order in which spare room goes back to columns after they shrank
_GROW = (KEY + NUM, PATH, TEXT, SHORT, BAR)
#: default floors of the kinds that shrink
_FLOORS = {TEXT: 10, PATH: 16, SHORT: 16, BAR: 5}

_FOLD = "fold:"


def fold(name: str) -> str:
    """The step of a drop order after which PATH column ``name`` may fold (else: last)."""
    return _FOLD + name


Justify = Literal["default", "left", "center", "right", "full"]


@dataclass(frozen=True)
class Col:
    """One column: ``name`` is its header and its name in a drop order."""

    name: str
    kind: str = NUM
    justify: Justify | None = None      # numbers right, the rest left
    floor: int | None = None            # narrowest width of TEXT, PATH, SHORT and BAR columns
    width: int | None = None            # natural width of a BAR; the cap of a SHORT column
    style: str | None = None
    header: str | None = None           # shown instead of name ("" for bars)

    @property
    def shown(self) -> str:
        return self.name if self.header is None else self.header


@dataclass(frozen=True)
class BarCell:
    """A bar drawn as wide as its column turns out to be."""

    size: float
    end: float
    color: str = "default"


Cell = str | Text | BarCell


class FitTable:
    """A table whose columns shrink, wrap or hide in a stated order, never cutting keys."""

    def __init__(self, cols: Sequence[Col], drop: Sequence[str] = (), *,
                 title: str | Text | None = None, caption: str | Text | None = None,
                 boxed: bool = False, **table_kwargs: Any) -> None:
        names = [c.name for c in cols]
        unknown = [d for d in drop if d.removeprefix(_FOLD) not in names]
        if unknown:
            raise ValueError(f"drop order names unknown columns: {unknown}")
        self.cols = list(cols)
        self.drop = tuple(drop)
        self.title, self.caption, self.boxed = title, caption, boxed
        self.table_kwargs = table_kwargs
        self.rows: list[list[Cell]] = []

    def add_row(self, *cells: Cell) -> None:
        if len(cells) > len(self.cols):
            raise ValueError(f"{len(cells)} cells for {len(self.cols)} columns")
        self.rows.append([*cells, *[""] * (len(self.cols) - len(cells))])

    # -- layout ------------------------------------------------------------------------------

    def _overhead(self, n: int) -> int:
        """Borders and padding of a table of ``n`` columns (rich's padding (0, 1))."""
        pad = 2 * n if self.table_kwargs.get("pad_edge", True) else max(2 * n - 2, 0)
        return pad + (n + 1 if self.boxed else 0)

    def _measure(self) -> tuple[list[int], list[int]]:
        """Natural and minimum width of every column."""
        nat, mins = [], []
        for k, col in enumerate(self.cols):
            cells = [_cell_width(row[k]) for row in self.rows if not isinstance(row[k], BarCell)]
            widest = max(cells, default=0)
            head = cell_len(col.shown)
            word = max((cell_len(w) for w in col.shown.split()), default=0)
            if col.kind == BAR:
                n = col.width or 20
                m = min(n, col.floor or _FLOORS[BAR])
            elif col.kind in (KEY, NUM):
                n, m = max(head, widest, 1), max(word, widest, 1)
            else:
                n = max(head, widest, 1)
                if col.kind == SHORT and col.width:
                    n = max(head, min(widest, col.width))
                m = min(n, max(word, col.floor or _FLOORS[col.kind]))
            nat.append(n)
            mins.append(m)
        return nat, mins

    def layout(self, avail: int) -> tuple[dict[int, int] | None, list[int]]:
        """Widths of the shown columns by index and the hidden columns' indices. When no
        layout fits, the widths are None and every column of the drop order is hidden."""
        nat, floors = self._measure()
        names = [c.name for c in self.cols]
        paths = [c.name for c in self.cols if c.kind == PATH]
        mins = [nat[i] if c.kind == PATH else floors[i] for i, c in enumerate(self.cols)]
        steps = [*self.drop, *(fold(p) for p in paths if fold(p) not in self.drop)]

        def need(active: Iterable[int]) -> int:
            act = list(active)
            return sum(mins[i] for i in act) + self._overhead(len(act))

        active, hidden = list(range(len(self.cols))), []
        for step in steps:
            if need(active) <= avail:
                break
            if step.startswith(_FOLD):             # a path may fold from now on
                i = names.index(step[len(_FOLD):])
                mins[i] = floors[i]
                continue
            i = names.index(step)
            active.remove(i)
            hidden.append(i)
        if need(active) > avail:               # below any layout: rich shrinks what is left
            return None, sorted(hidden)
        widths = self._grow(active, mins, nat, avail - need(active))
        for i in reversed(hidden[:]):          # the more important first: back if room allows
            trial = sorted([*active, i])       # ... and if no path folds more for it
            if need(trial) > avail:
                continue
            grown = self._grow(trial, mins, nat, avail - need(trial))
            if all(grown[p] >= widths[p] for p in active if self.cols[p].kind == PATH):
                active, widths = trial, grown
                hidden.remove(i)
        return widths, sorted(hidden)

    def _grow(self, active: list[int], mins: list[int], nat: list[int],
              spare: int) -> dict[int, int]:
        """Widths from the minimums, ``spare`` cells given back in the order of :data:`_GROW`."""
        widths = {i: mins[i] for i in active}
        for kinds in _GROW:
            idx = [i for i in active if self.cols[i].kind in kinds and nat[i] > widths[i]]
            if kinds == KEY + NUM:             # one header back on one line at a time
                idx.sort(key=lambda i: nat[i] - widths[i])
                for i in idx:
                    if nat[i] - widths[i] <= spare:
                        spare -= nat[i] - widths[i]
                        widths[i] = nat[i]
                continue
            wants = [nat[i] - widths[i] for i in idx]
            if sum(wants) <= spare:
                gets = wants
            else:
                gets = [spare * w // sum(wants) for w in wants]
                for k in sorted(range(len(wants)), key=lambda k: -wants[k])[:spare - sum(gets)]:
                    gets[k] += 1
            for i, g in zip(idx, gets, strict=True):
                widths[i] += g
                spare -= g
        return widths

    # -- drawing -----------------------------------------------------------------------------

    def _table(self, widths: dict[int, int] | None, hidden: list[int]) -> Table:
        kwargs = dict(self.table_kwargs)
        if not self.boxed:
            kwargs.setdefault("box", None)
        elif "box" not in kwargs:
            kwargs["box"] = rich_box.HEAVY_HEAD
        table = Table(title=self.title, caption=self.caption, title_justify="left",
                      caption_justify="left", **kwargs)
        shown = sorted(widths) if widths is not None else [
            i for i in range(len(self.cols)) if i not in hidden]
        for i in shown:
            col = self.cols[i]
            justify = col.justify or ("right" if col.kind == NUM else "left")
            table.add_column(col.shown, justify=justify, style=col.style, overflow="fold",
                             no_wrap=False, width=None if widths is None else widths[i])
        for row in self.rows:
            table.add_row(*[self._cell(row[i], self.cols[i],
                                       None if widths is None else widths[i]) for i in shown])
        return table

    @staticmethod
    def _cell(cell: Cell, col: Col, width: int | None) -> RenderableType:
        if isinstance(cell, BarCell):
            return Bar(size=cell.size or 1.0, begin=0, end=cell.end, width=width,
                       color=cell.color)
        if col.kind == SHORT and width is not None:
            text = cell if isinstance(cell, Text) else Text(cell)
            return Text(shorten_left(text.plain, width), style=text.style)
        return Text(cell) if isinstance(cell, str) else cell    # input text is never markup

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths, hidden = self.layout(options.max_width)
        table = self._table(widths, hidden)
        hidden = [i for i in hidden if self.cols[i].kind != BAR]    # a bar repeats a number
        if not hidden:
            yield table
            return
        nat, floors = self._measure()          # the narrowest width that hides nothing:
        least = [n if c.kind == PATH else f for c, n, f in zip(self.cols, nat, floors, strict=True)]
        full = sum(least) + self._overhead(len(least)) + console.width - options.max_width
        note = Text(f"hidden for width: {', '.join(self.cols[i].shown for i in hidden)}; "
                    f"see --width {full} or --json", style="dim")
        if self.caption is None:
            yield table
            yield note
            return
        table.caption = Text.assemble(note, "\n", self.caption)   # right under the table
        yield table

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        nat, mins = self._measure()
        widths, _ = self.layout(options.max_width)
        least = (sum(widths.values()) + self._overhead(len(widths)) if widths is not None
                 else options.max_width)
        most = sum(nat) + self._overhead(len(nat))
        return Measurement(min(least, most), most).with_maximum(options.max_width)


def _cell_width(cell: Cell) -> int:
    plain = cell.plain if isinstance(cell, Text) else str(cell)
    return max((cell_len(line) for line in plain.splitlines()), default=0)


def shorten_left(name: str, width: int) -> str:
    """Keep the end of a long name, where names differ: '…gradients_AddN_5_0'."""
    return name if cell_len(name) <= width else "…" + name[-(width - 1):]


def common_dir(paths: Iterable[object]) -> tuple[str, list[str]]:
    """The directory every path is under (ending in a separator, or '') and each path below it.

    ``["examples/data/a.log", "examples/data/m/p.0"]`` -> ``("examples/data/", ["a.log",
    "m/p.0"])``; a single file gives its directory and its name.
    """
    strs = [str(p) for p in paths]
    seps = "/" + (os.sep if os.sep != "/" else "")
    dirs = [p[:max(p.rfind(s) for s in seps) + 1] for p in strs]
    prefix = os.path.commonprefix(dirs) if dirs else ""
    prefix = prefix[:max(prefix.rfind(s) for s in seps) + 1]
    return prefix, [p[len(prefix):] for p in strs]
