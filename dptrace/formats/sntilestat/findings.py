"""The findings rules of SambaNova tile snapshots: pure functions from the derived tables of
:mod:`.analyses` to :class:`~dptrace.findings.Finding` rows, registered with their thresholds
(:mod:`dptrace.findings.thresholds` holds the mechanism)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ...findings import Finding, ev
from ...findings import text as tx
from ...findings.rules import Rule, register_rules
from ...findings.thresholds import Threshold, register_thresholds
from . import compute as tl

# -- thresholds --------------------------------------------------------------------------------

#: SambaNova: a tile at or above this %idle with no PID is idle (``analysis.tiles.IDLE_PCT``)
IDLE_PCT: float = tl.IDLE_PCT

#: SambaNova: an instance whose tiles executed less than this share of the time on average
#: (``tiles.instances.exec_mean_pct``). Real instances training: 89.9-96.9%; the docs' PID
#: 49880 caught loading its program: 6.2%
LOW_EXEC_PCT: float = 50.0

#: SambaNova: an instance whose tiles spent more than this share of the time loading the
#: program or its arguments or checkpointing (``pload + aload + chkpt`` means). Real
#: training instances: 0.2-1.3%; PID 49880: 13.0%
LOAD_PCT: float = 10.0


register_thresholds(
    Threshold("low_exec", "pct", LOW_EXEC_PCT, "%",
              "an instance's tiles executing less than this share of the time on average"),
    Threshold("load_overhead", "pct", LOAD_PCT, "%",
              "an instance's tiles loading program or arguments or checkpointing more than "
              "this share of the time"),
)



def idle_tiles(idle: pd.DataFrame) -> list[Finding]:
    """Per source: tiles idle (>= 99.9 %idle, no PID) in every snapshot (``tiles.idle_tiles``)."""
    out: list[Finding] = []
    if idle.empty:
        return out
    always = idle[idle["always_idle"].astype(bool)]
    for src, g in always.groupby(always["source"].astype(str), sort=False):
        snaps = int(g["snapshots"].iloc[0])
        out.append(Finding(
            "warning", "idle_tiles", "tile", src,
            f"{len(g)} tile(s) of {src} were idle in every snapshot ({tx.plural(snaps, 'snapshot')}"
            f"): no process owned them and they were at least {IDLE_PCT:g}% idle.",
            ev("tiles.idle_tiles", source=src, always_idle=True),
            "Check that the job asked for every RDU it was given (more data-parallel "
            "instances), or release them for other work.",
            value=float(len(g))))
    return out


def lowest_exec_instance(instances: pd.DataFrame) -> list[Finding]:
    """Per source with 2+ instances (PIDs): the one with the lowest mean %exec
    (``tiles.instances.lowest``), against the instances' median."""
    out: list[Finding] = []
    if instances.empty:
        return out
    for src, g in instances.groupby(instances["source"].astype(str), sort=False):
        if len(g) < 2:
            continue
        lowest = g[g["lowest"].astype(bool)]
        if lowest.empty:        # no %exec at all (every mean missing): nothing is lowest
            continue
        low, med = lowest.iloc[0], g["exec_mean_pct"].median()
        out.append(Finding(
            "info", "lowest_exec_instance", "instance", f"PID {low['pid']}",
            f"PID {low['pid']} has the lowest mean %exec of the {len(g)} instances in {src}: "
            f"{low['exec_mean_pct']:.1f}% (instances' median {med:.1f}%).",
            ev("tiles.instances", source=src, pid=low['pid'], lowest=True),
            value=float(low["exec_mean_pct"])))
    return out


def low_exec(instances: pd.DataFrame, pct: float = LOW_EXEC_PCT) -> list[Finding]:
    """SambaNova instances (``tiles.instances``) whose tiles executed less than ``pct`` % of
    the time on average: the instance is not training most of the time."""
    out = []
    for r in instances.itertuples(index=False):
        e = r.exec_mean_pct
        if tx.na(e) or not e < pct:
            continue
        busy = _busy(r)
        out.append(Finding(
            "warning", "low_exec", "instance", f"PID {r.pid}",
            f"PID {r.pid} in {r.source} executed only {e:.1f}% of the time on average over "
            f"its {tx.plural(tx.count(r.tiles), 'tile')} and "
            f"{tx.plural(tx.count(r.snapshots), 'snapshot')}"
            f"{busy}.",
            ev("tiles.instances", source=r.source, pid=r.pid),
            "A SambaNova instance that is not executing is loading, checkpointing or waiting "
            "for input: look at the host side (data loading, the other instances it "
            "synchronises with) and at the snapshots' timing (program load at start-up).",
            value=float(e), threshold=float(pct)))
    return out


def load_overhead(instances: pd.DataFrame, pct: float = LOAD_PCT) -> list[Finding]:
    """SambaNova instances whose tiles spent more than ``pct`` % of the time loading the
    program (``%pload``) or arguments (``%aload``) or checkpointing (``%chkpt``)."""
    out = []
    for r in instances.itertuples(index=False):
        known = _load_parts(r)
        total = sum(v for _, v in known)
        if not known or not total > pct:
            continue
        detail = ", ".join(f"{n} {v:.1f}%" for n, v in known)
        out.append(Finding(
            "warning", "load_overhead", "instance", f"PID {r.pid}",
            f"PID {r.pid} in {r.source} spent {total:.1f}% of its tiles' time loading or "
            f"checkpointing ({detail}).",
            ev("tiles.instances", source=r.source, pid=r.pid),
            "Program load belongs to start-up: a long capture of a training run should "
            "show it once; frequent checkpoints or argument loads cost steps (SambaFlow "
            "checkpoint interval, arguments kept on the device).",
            value=total, threshold=float(pct)))
    return out


#: the columns of ``tiles.instances`` that hold time not spent executing, as messages name them
_LOAD_COLUMNS = (("program load", "pload_mean_pct"), ("argument load", "aload_mean_pct"),
                 ("checkpoint", "chkpt_mean_pct"))


def _load_parts(r: Any) -> list[tuple[str, float]]:
    """(name, mean %) of an instance's load and checkpoint columns that are known."""
    values = [(n, getattr(r, c, np.nan)) for n, c in _LOAD_COLUMNS]
    return [(n, float(v)) for n, v in values if not tx.na(v)]


def _busy(r: Any) -> str:
    """' (program load 11.2%, argument load 1.8%)' for the non-zero load/checkpoint means."""
    shown = [f"{n} {v:.1f}%" for n, v in _load_parts(r) if v > 0]
    return f" ({', '.join(shown)})" if shown else ""


register_rules(
    Rule(("idle_tiles",), ("tiles.idle_tiles",), idle_tiles, 230),
    Rule(("lowest_exec_instance",), ("tiles.instances",), lowest_exec_instance, 240),
    Rule(("low_exec",), ("tiles.instances",), low_exec, 250),
    Rule(("load_overhead",), ("tiles.instances",), load_overhead, 260),
)
