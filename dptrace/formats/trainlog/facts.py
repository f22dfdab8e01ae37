"""What training logs: the world size their lines state, the ranks that printed, torchrun's
prefixes tell the runs table (world size, nodes, launcher, job id), declared with
:func:`dptrace.runs.register_facts`."""

from __future__ import annotations

import os
from collections.abc import Mapping

import pandas as pd

from ... import runs
from ...runs import Facts, Rows, register_facts


def _world_size_from() -> dict[str, str]:
    """What each pattern of a training log's ``world_size`` rows read (the trainlog format's
    :data:`~dptrace.formats.trainlog.rules.WORLD_SIZE_FROM`: its rows came from it)."""
    from .rules import WORLD_SIZE_FROM
    return WORLD_SIZE_FROM


def _from_trainlog(rows: Rows, metrics: pd.DataFrame | None,
                   throughput: pd.DataFrame | None) -> None:
    for run, g in runs.per_run(metrics):
        said = g[g["name"] == "world_size"]
        if "rank" in said:  # statements repeated by every rank: one is enough
            said = said.sort_values("lineno", kind="stable")
        sizes = sorted({int(v) for v in said["value"].dropna() if float(v).is_integer()
                        and v > 0})
        if len(sizes) == 1:
            first = said[said["value"] == sizes[0]].iloc[0]
            what = _world_size_from().get(str(first["pattern"]), str(first["pattern"]))
            where = (f"{os.path.basename(str(first['source']))} line {int(first['lineno'])}"
                     if "source" in first and pd.notna(first.get("lineno")) else "training log")
            runs.set_world(rows[run], sizes[0], f"{what} ({where})")
        elif sizes and rows[run]["world_size"] is None:
            rows[run]["world_size_from"] = ("training logs disagree ("
                                            + ", ".join(map(str, sizes)) + " ranks)")
        dev = g[(g["name"] == "devices") & (g["pattern"] == "horovod_benchmark")]
        sizes = sorted({int(v) for v in dev["value"].dropna() if float(v).is_integer()})
        if len(sizes) == 1:
            runs.set_world(rows[run], sizes[0],
                       f"Horovod benchmark: Total img/sec on {sizes[0]} device(s)")
    printed: dict[str, set[int]] = {}
    for df in (throughput, metrics):
        for run, g in runs.per_run(df):
            if "rank" in g:
                printed.setdefault(run, set()).update(int(r) for r in runs.distinct(g["rank"]))
    for run, ranks in printed.items():
        if rows[run]["world_size"] is None and len(ranks) > 1 and \
                ranks == set(range(len(ranks))):
            runs.set_world(rows[run], len(ranks), f"ranks 0-{len(ranks) - 1} printed")
    for run, g in runs.per_run(throughput):
        if rows[run]["launcher"] is None:
            inst = pd.Series(runs.distinct(g["instance"]), dtype=object).astype(str)
            if inst.str.fullmatch(r"default\d+").any():
                rows[run]["launcher"] = "torchrun"


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_trainlog(rows, runs.columns(tables.get("train_metrics"), "name", "pattern", "value",
                                     "source", "lineno", "rank", "instance"),
                   runs.columns(tables.get("throughput"), "rank", "instance", "pattern"))


register_facts(Facts("trainlog", _step, 50))
