"""What training logs: the world size their lines state, the ranks that printed, torchrun's
prefixes tell the runs table (world size, nodes, launcher, job id), declared with
:func:`dptrace.runs.register_facts`."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
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
    """Per run: the one positive whole world size its lines state (else that they
    disagree), then the one device count of a Horovod benchmark's 'Total img/sec on N
    device(s)'; where neither said one, ranks 0..N-1 that printed; torchrun's
    ``[defaultN]:`` prefixes. Each rule is a few operations on the whole table (the rows it
    reads taken out once), not a scan of the table per run (20,000 runs of one small log
    each)."""
    if metrics is not None and len(metrics) and "run" in metrics:
        name = metrics["name"]
        _world_sizes(rows, metrics[(name == "world_size").fillna(False).to_numpy(bool)])
        dev = (name == "devices") & (metrics["pattern"] == "horovod_benchmark")
        _devices(rows, metrics[dev.fillna(False).to_numpy(bool)])
    printed: dict[str, set[int]] = {}
    for df in (throughput, metrics):
        for run, rank in _pairs(df, "rank"):
            printed.setdefault(run, set()).add(int(rank))
    for run, ranks in printed.items():
        if rows[run]["world_size"] is None and len(ranks) > 1 and \
                ranks == set(range(len(ranks))):
            runs.set_world(rows[run], len(ranks), f"ranks 0-{len(ranks) - 1} printed")
    torch = {run for run, inst in _pairs(throughput, "instance")
             if _TORCHRUN.fullmatch(str(inst))}
    for run in torch:
        if rows[run]["launcher"] is None:
            rows[run]["launcher"] = "torchrun"


#: torchrun ``--tee``'s prefix, as the instance of a throughput row
_TORCHRUN = re.compile(r"default\d+")
#: rows of a table deduplicated at once by :func:`_pairs` (a log of millions of rows)
_CHUNK = 1 << 20


def _pairs(df: pd.DataFrame | None, col: str) -> list[tuple[str, Any]]:
    """The distinct (run, value) pairs of column ``col`` where both are stated: a run's
    table's values counted as :func:`dptrace.runs.distinct` does (one log of millions of
    rows), several runs' pairs deduplicated a chunk of rows at a time."""
    if df is None or not len(df) or "run" not in df or col not in df:
        return []
    run = df["run"]
    if isinstance(run.dtype, pd.CategoricalDtype):
        codes = run.cat.codes.to_numpy()
        if codes[0] >= 0 and (codes == codes[0]).all():
            one = str(run.cat.categories[codes[0]])
            return [(one, v) for v in runs.distinct(df[col])]
    out: dict[tuple[str, Any], None] = {}
    for lo in range(0, len(df), _CHUNK):
        part = pd.DataFrame({"run": run.iloc[lo:lo + _CHUNK],
                             col: df[col].iloc[lo:lo + _CHUNK]}).dropna().drop_duplicates()
        out.update(dict.fromkeys(zip(part["run"].astype(str).tolist(),
                                     part[col].tolist(), strict=True)))
    return list(out)


def _whole(value: object) -> bool:
    return isinstance(value, float) and value.is_integer()


def _world_sizes(rows: Rows, said: pd.DataFrame) -> None:
    """Per run, the world size its ``world_size`` rows state: the one distinct positive
    whole value, named after the first row (by line) that states it, or that the values
    disagree."""
    if not len(said):
        return
    if "rank" in said:  # statements repeated by every rank: one is enough
        said = said.sort_values("lineno", kind="stable")
    # each (run, size) pair's first row (by position) found at once; only those rows are
    # read in Python (a dense log states the world size ~80 times a MB)
    value = said["value"].astype("float64").to_numpy()
    with np.errstate(invalid="ignore"):
        whole = np.flatnonzero(np.isfinite(value) & (value > 0) & (np.trunc(value) == value))
    if not len(whole):
        return
    codes = pd.factorize(said["run"])[0][whole]
    firsts = whole[~pd.DataFrame({"c": codes, "v": value[whole]}).duplicated().to_numpy()]
    run = said["run"].iloc[firsts].astype(str).tolist()
    sizes: dict[str, set[int]] = {}
    first: dict[tuple[str, int], int] = {}
    for i, r, v in zip(firsts.tolist(), run, value[firsts].tolist(), strict=True):
        sizes.setdefault(r, set()).add(int(v))
        first.setdefault((r, int(v)), i)
    pattern = said["pattern"]
    source = said.get("source")
    lineno = said.get("lineno")
    for r, found in sizes.items():
        if len(found) == 1:
            size = next(iter(found))
            i = first[(r, size)]
            pat = str(pattern.iloc[i])
            what = _world_size_from().get(pat, pat)
            line = lineno.iloc[i] if lineno is not None else None
            where = (f"{os.path.basename(str(source.iloc[i]))} line {int(line)}"
                     if source is not None and line is not None and pd.notna(line)
                     else "training log")
            runs.set_world(rows[r], size, f"{what} ({where})")
        elif rows[r]["world_size"] is None:
            rows[r]["world_size_from"] = ("training logs disagree ("
                                          + ", ".join(map(str, sorted(found))) + " ranks)")


def _devices(rows: Rows, dev: pd.DataFrame) -> None:
    """Per run, the one whole device count of a Horovod benchmark's 'Total img/sec on N
    device(s)' (after the run's world_size rows: the first that states one wins)."""
    found: dict[str, set[int]] = {}
    for r, v in zip(dev["run"].astype(str).tolist(),
                    dev["value"].astype("float64").tolist(), strict=True):
        if _whole(v):
            found.setdefault(r, set()).add(int(v))
    for r, sizes in found.items():
        if len(sizes) == 1:
            size = next(iter(sizes))
            runs.set_world(rows[r], size, f"Horovod benchmark: Total img/sec on {size} device(s)")


def _step(rows: Rows, tables: Mapping[str, pd.DataFrame]) -> None:
    _from_trainlog(rows, runs.columns(tables.get("train_metrics"), "name", "pattern", "value",
                                     "source", "lineno", "rank", "instance"),
                   runs.columns(tables.get("throughput"), "rank", "instance", "pattern"))


register_facts(Facts("trainlog", _step, 50))
