"""The rich drawer of the MLPerf section: one line per log (the runs table of
:mod:`.sections`); epochs are in the HTML figure and the JSON."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.text import Text

from ...reports.fit import KEY, PATH, TEXT, Col, FitTable, common_dir
from ...reports.fmt import count, human_time, missing, num, text
from ...reports.model import Section

#: the runs table, when it does not fit the terminal (see :mod:`dptrace.reports.fit`)
RUNS_DROP = ("from", "batch", "accuracy", "nodes", "ranks")


def draw_mllog(section: Section, opts: Mapping[str, Any] | None = None) -> RenderableType:
    runs = section.tables["runs"]
    parts: list[RenderableType] = [Text(section.title, style="bold"),
                                   Text(section.caption, style="dim")]
    where, names = common_dir(runs["source"].astype(str))
    if where:
        parts.append(Text(f"in {where}", style="dim"))
    table = FitTable([Col("input", PATH), Col("benchmark", KEY), Col("nodes"), Col("ranks"),
                      Col("batch"), Col("time to train"), Col("status", KEY), Col("epochs"),
                      Col("accuracy"), Col("samples/s"), Col("from", TEXT, floor=10)],
                     RUNS_DROP, pad_edge=False)
    for name, r in zip(names, runs.itertuples(index=False), strict=True):
        ttt = "-" if missing(r.time_to_train_s) else human_time(r.time_to_train_s * 1e6)
        table.add_row(name, text(r.benchmark) or "?", count(r.nodes), count(r.ranks),
                      count(r.global_batch_size), ttt, text(r.status), count(r.epochs),
                      num(r.eval_accuracy, 4), num(r.throughput_samples_per_s, 1),
                      text(r.throughput_from))
    parts.append(table)
    return Group(*parts)
