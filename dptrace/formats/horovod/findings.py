"""The findings rules of Horovod timelines: pure functions from the derived tables of
:mod:`.analyses` to :class:`~dptrace.findings.Finding` rows, registered with their thresholds
(:mod:`dptrace.findings.thresholds` holds the mechanism)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ...findings import Finding, ev
from ...findings import text as tx
from ...findings import thresholds as th
from ...findings.rules import Rule, register_rules
from ...findings.thresholds import Threshold, register_thresholds
from . import compute as hv

# -- thresholds --------------------------------------------------------------------------------

#: Horovod: a negotiation needs ticks from this many ranks to name a last rank
MIN_RANKS: int = hv.MIN_RANKS

#: Horovod: a rank the others waited for (last to report, NEGOTIATION_WAIT_US or more after
#: the first) in at least this share of the compared steady-state negotiations is a straggler
#: (the Horovod section marks that rank, and only it, in its ``straggler`` column: the
#: drawer's red is the rule's own judgement)
LAST_SHARE: float = 0.5

#: Horovod: a last tick less than this after the first rank's is the coordinator's reading
#: order within one cycle, not a wait (``analysis.horovod.WAIT_US``)
NEGOTIATION_WAIT_US: float = hv.WAIT_US

#: Horovod: compared steady-state negotiations (a tensor's second or later) a timeline needs
#: before a rank is named. Start-up (the broadcasts, the first step) is never judged: real
#: balanced runs put one rank last in all of it (tests/fixtures/horovod_mpi/normal: rank 1 in
#: 19 of 21, up to 12.6 ms; the 2019 timelines: rank 0, up to 3.1 s, while the initial state
#: is broadcast from it), and with the response cache on it is all the ticks there are.
#: Ten is a few steps of a small model: one step's tensors alone (the 2019 timelines have 6
#: per step, 654 steady ones in all) are too few to tell a rank that is late every step
NEGOTIATION_MIN_STEADY: int = 10


register_thresholds(
    Threshold("negotiation_straggler", "share", 100.0 * LAST_SHARE, "%",
              "share of a timeline's compared steady-state Horovod negotiations in which the "
              "others waited 1 ms or more for a rank",
              scale=0.01),
)



def small_horovod_allreduce(small: pd.DataFrame, share: float = th.SMALL_SHARE,
                            limit_bytes: int = th.SMALL_BYTES) -> list[Finding]:
    """Per Horovod timeline: more than ``share`` of the allreduce time in responses of at
    most ``limit_bytes`` (``horovod.small_allreduces``), when those took at least
    :data:`.th.SMALL_MIN_S_PER_RANK`: the latency-bound side of Horovod (a scalar
    allreduced every step, gradients sent one by one with fusion off)."""
    out = []
    for r in small.to_dict("records"):
        s = r["small_share"]
        if tx.na(s) or not s > share or tx.na(r["small_s"]) or \
                r["small_s"] < th.SMALL_MIN_S_PER_RANK:
            continue
        n = int(r["small_responses"])
        out.append(Finding(
            "warning", "small_message_allreduce", "job", str(r["source"]),
            f"{100 * s:.1f}% of Horovod's allreduce time in {r['source']} "
            f"({tx.time_us(1e6 * r['small_s'])} of {tx.time_us(1e6 * r['allreduce_s'])}) is in "
            "responses of at most "
            f"{limit_bytes} bytes "
            f"({tx.plural(n, 'response')} of {tx.plural(int(r['small_tensors']), 'tensor')}, "
            f"{tx.time_us(r['small_us_each'])} each): latency, not bandwidth, sets "
            "their time.",
            ev("horovod.small_allreduces", source=r['source']),
            "Send fewer, larger allreduces: keep tensor fusion on (HOROVOD_FUSION_THRESHOLD, "
            "default 64 MB; 0 turns it off) and give it time to fill (HOROVOD_CYCLE_TIME); "
            "average metrics every N steps, or stack the scalars into one tensor and "
            "allreduce that once.",
            value=100 * float(s), threshold=100 * share))
    return out


def truncated_input(runs: pd.DataFrame) -> list[Finding]:
    """Timelines that end inside a record (``hvd_runs.truncated``)."""
    return [Finding(
        "warning", "truncated_input", "input", str(r["source"]),
        f"The timeline {r['source']} ends inside a record, so the job was probably killed "
        "while writing it; the events up to the cut are used.",
        ev("horovod.runs", source=r['source'], truncated=True),
        "Numbers cover the traced part of the run only.")
        for _, r in runs.iterrows() if tx.flag(r["truncated"])]


def open_intervals(runs: pd.DataFrame) -> list[Finding]:
    """Timelines with B records that never got their E (``hvd_runs.open_intervals``)."""
    return [Finding(
        "warning", "open_intervals", "input", str(r["source"]),
        f"{tx.plural(int(r['open_intervals']), 'interval')} of {r['source']} never closed "
        "(B without E); they are counted as open, with no duration.",
        ev("horovod.runs", source=r['source'], open_intervals=int(r['open_intervals'])),
        "An op still in flight when the file ended: the job was killed or the timeline cut.",
        value=float(r["open_intervals"]), threshold=0.0)
        for _, r in runs.iterrows() if tx.count(r["open_intervals"])]


def unmatched_ends(runs: pd.DataFrame) -> list[Finding]:
    """Timelines with E records that closed nothing (``hvd_runs.unmatched_ends``)."""
    return [Finding(
        "info", "unmatched_ends", "input", str(r["source"]),
        f"{int(r['unmatched_ends']):,} E record(s) of {r['source']} closed nothing (the file "
        "was rewritten or cut at its start) and were ignored.",
        ev("horovod.runs", source=r['source'], unmatched_ends=int(r['unmatched_ends'])),
        value=float(r["unmatched_ends"]), threshold=0.0)
        for _, r in runs.iterrows() if tx.count(r["unmatched_ends"])]


def cached_negotiations(runs: pd.DataFrame) -> list[Finding]:
    """Timelines where Horovod's response cache skipped the rank-ready ticks of some
    negotiations (``hvd_runs.negotiations_with_ticks`` < ``negotiations``)."""
    out = []
    for _, r in runs.iterrows():
        if tx.na(r["negotiations"]) or tx.na(r["negotiations_with_ticks"]):
            continue
        n, ticked = int(r["negotiations"]), int(r["negotiations_with_ticks"])
        if n and ticked < n:
            out.append(Finding(
                "info", "cached_negotiations", "input", str(r["source"]),
                f"Only {ticked:,} of {n:,} negotiations in {r['source']} have rank-ready ticks "
                "(Horovod's response cache skips them), so the straggler figures cover those "
                "only.",
                ev("horovod.runs", source=r['source'], negotiations_with_ticks=ticked),
                value=float(ticked), threshold=float(n)))
    return out


def _ticked(runs: pd.DataFrame | None, src: str) -> tuple[int, int] | None:
    """(negotiations, negotiations with ticks) of the timeline ``src`` (``hvd_runs``)."""
    if runs is None or runs.empty:
        return None
    r = runs[runs["source"].astype(str) == src]
    if r.empty or tx.na(r["negotiations"].iloc[0]) or tx.na(r["negotiations_with_ticks"].iloc[0]):
        return None
    return int(r["negotiations"].iloc[0]), int(r["negotiations_with_ticks"].iloc[0])


def _named_last(steady: pd.DataFrame, share: float) -> Any | None:
    """The one rank of a timeline's steady state that the others waited for in at least
    ``share`` of the compared negotiations, strictly more often than any other rank (a tie
    names nobody); None when there is none."""
    if len(steady) < 2:
        return None
    top = steady.sort_values(["waited", "rank"], ascending=[False, True], kind="stable")
    first, second = top.iloc[0], top.iloc[1]
    if tx.na(first["waited_share"]) or not first["waited_share"] >= share \
            or not first["waited"] > second["waited"]:
        return None
    return first


def _startup_only(src: str, startup: pd.DataFrame, steady_n: int, min_steady: int,
                  runs: pd.DataFrame | None) -> Finding:
    """The info finding of a timeline whose ticks cannot name a rank: start-up only, or too
    few steady-state negotiations."""
    n, b = int(startup["compared"].max()), int(startup["broadcasts"].max())
    t0 = startup["steady_from_us"].iloc[0]
    top = startup.sort_values(["last", "rank"], ascending=[False, True], kind="stable")
    first = top.iloc[0]
    lead = (f"At start-up rank {first['rank']} was last in {int(first['last']):,} of {n:,} "
            f"(up to {tx.time_us(first['max_lag_us'])} behind the first rank): warm-up, not "
            "judged." if first["last"] > top.iloc[1]["last"] else
            f"At start-up no one rank was last most often ({int(first['last']):,} of {n:,} "
            "at most).")
    at = (f"before the second step began at {tx.time_us(t0)}" if not tx.na(t0) else
          "and no tensor is negotiated twice in the file (start-up only, or a cut-out of one "
          "step)")
    kinds = ([f"{tx.plural(b, 'broadcast')} of the initial state"] if b else []) + (
        [f"{tx.plural(n - b, 'first negotiation')} of a tensor (the first step, or a one-off "
         "tensor)"] if n - b else [])
    ticked = _ticked(runs, src)
    cache = ""
    if ticked is not None and ticked[1] < ticked[0]:
        cache = (f" The other {ticked[0] - ticked[1]:,} negotiations carry no ticks: "
                 "Horovod's response cache negotiates a cached tensor without them.")
    few = ("No steady-state negotiation" if not steady_n else
           f"Only {tx.plural(steady_n, 'steady-state negotiation')} (a tensor's second or later; "
           f"{min_steady} are needed)")
    return Finding(
        "info", "unjudged_negotiations", "input", src,
        f"{few} of {src} {'carries' if steady_n <= 1 else 'carry'} ticks from 2+ ranks, so "
        f"the timeline cannot name the rank the others wait for. Its "
        f"{tx.plural(n, 'compared negotiation')} {'is' if n == 1 else 'are'} start-up: "
        f"{' and '.join(kinds)}, {at}.{cache} {lead}",
        ev("horovod.stragglers", source=src),
        "To see who the others wait for in the steady state, profile a run with "
        "HOROVOD_CACHE_CAPACITY=0 (every negotiation then carries ticks), or compare the "
        "ranks' step times.",
        value=float(steady_n), threshold=float(min_steady))


def negotiation_stragglers(stragglers: pd.DataFrame, runs: pd.DataFrame | None = None,
                           share: float = LAST_SHARE,
                           min_steady: int = NEGOTIATION_MIN_STEADY) -> list[Finding]:
    """Per timeline of ``horovod.stragglers`` (``phase_stragglers``), judged on its steady
    state only (a tensor's second negotiation or later): the rank the others waited for
    (last to report ready, :data:`~dptrace.formats.horovod.compute.WAIT_US` or more after the first
    rank) in at least ``share`` of the ``min_steady`` or more compared steady-state
    negotiations, strictly more often than any other rank. Start-up (the broadcasts of the
    initial state, the first step: with Horovod's response cache on, the only negotiations
    with ticks) is warm-up and names nobody; a timeline whose ticks are only start-up ones
    (or too few steady ones) gets an ``unjudged_negotiations`` info finding instead. One run
    never names two ranks: timelines of one run that name different ranks name none, and
    say so."""
    out: list[Finding] = []
    if stragglers.empty:
        return out
    by = ["run"] if "run" in stragglers.columns else []
    for _, of_run in stragglers.groupby(by or (lambda _: 0), sort=False, observed=True):
        named: list[tuple[str, Any, int]] = []
        for src, g in of_run.groupby(of_run["source"].astype(str), sort=False):
            phase = g["phase"].astype(str)
            steady, startup = g[phase == hv.STEADY], g[phase == hv.STARTUP]
            steady_n = int(steady["compared"].max()) if len(steady) else 0
            if steady_n >= min_steady:
                r = _named_last(steady, share)
                if r is not None:
                    named.append((str(src), r, len(steady)))
            elif len(startup) >= 2:
                out.append(_startup_only(str(src), startup, steady_n, min_steady, runs))
        if len({int(r["rank"]) for _, r, _ in named}) > 1:
            said = ", ".join(f"rank {r['rank']} in {src}" for src, r, _ in named)
            out.append(Finding(
                "info", "unjudged_negotiations", "input", named[0][0],
                f"The timelines of this run name different ranks as the one the others wait "
                f"for in the steady state ({said}), so none is named.",
                tuple(ev("horovod.stragglers", source=src, rank=r["rank"])
                      for src, r, _ in named),
                "Give each job's timeline a run of its own (LABEL=PATH), or check that the "
                "files come from one job."))
            continue
        for src, r, world in named:
            out.append(Finding(
                "warning", "negotiation_straggler", "rank", f"rank {r['rank']}",
                f"Rank {r['rank']} was the last to report ready, {tx.time_us(hv.WAIT_US)} or "
                f"more after the first rank, in {int(r['waited']):,} of "
                f"{int(r['compared']):,} steady-state negotiations "
                f"({100 * r['waited_share']:.1f}%) of {src}, from "
                f"{tx.time_us(r['steady_from_us'])} "
                "on (a tensor's second negotiation or later; start-up is left out); its ticks "
                f"came {tx.time_us(r['mean_lag_us'])} after the first rank's on average (max "
                f"{tx.time_us(r['max_lag_us'])}).",
                ev("horovod.stragglers", source=src, rank=r['rank']),
                f"The other ranks wait for rank {r['rank']} before each collective: look at "
                "what it does between steps (data loading, uneven work, a slower node).",
                rank=int(r["rank"]), value=100 * float(r["waited_share"]),
                threshold=100 * share, world_size=world, origin=src))
    return out


register_rules(
    Rule(("truncated_input",), ("horovod.runs",), truncated_input, 160),
    Rule(("open_intervals",), ("horovod.runs",), open_intervals, 170),
    Rule(("unmatched_ends",), ("horovod.runs",), unmatched_ends, 180),
    Rule(("cached_negotiations",), ("horovod.runs",), cached_negotiations, 190),
    Rule(("negotiation_straggler", "unjudged_negotiations"),
         ("horovod.stragglers", "horovod.runs"), negotiation_stragglers, 200),
    Rule(("small_message_allreduce",), ("horovod.small_allreduces",),
         small_horovod_allreduce, 210),
)
