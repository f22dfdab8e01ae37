"""The findings rules of training logs (throughput lines, job figures) and the rule over every
straggler finding: pure functions from the derived tables of :mod:`.analyses` to
:class:`~dptrace.findings.Finding` rows, registered with their thresholds
(:mod:`dptrace.findings.thresholds` holds the mechanism)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd

from ...analyses import Analyses
from ...findings import Evidence, Finding, ev
from ...findings import text as tx
from ...findings.rules import FindingsRule, Rule, register_rules
from ...findings.thresholds import Threshold, register_thresholds
from . import job as jobfig
from . import throughput as thr

# -- thresholds --------------------------------------------------------------------------------

#: throughput: an instance more than this fraction below its series' median is a straggler
#: (``analysis.throughput.STRAGGLER_THRESHOLD``, counted by ``throughput_summary``)
STRAGGLER_FRACTION: float = thr.STRAGGLER_THRESHOLD

#: throughput: share of each instance's steps dropped as warm-up before comparing
WARMUP_FRACTION: float = thr.WARMUP_FRACTION

# -- one rank named by several sources ---------------------------------------------------------
#: sources (compute straggler, negotiation straggler, throughput straggler) that must name one
#: rank of a run for one cross_source_straggler finding of severity critical
CROSS_SOURCES: int = 2

#: throughput: the last third of an instance's steady steps slower than the first third by
#: more than this fraction (median against median) is a drift. Real logs drift by -5% to
#: +4% (tests/test_findings_comm_drift_world.py): noise stays well below
DRIFT_FRACTION: float = 0.10

#: throughput: an instance needs this many steady (after warm-up) figures to judge a drift
#: (thirds of at least 5: one slow step, a checkpoint, moves no median)
DRIFT_MIN_ROWS: int = 15

# -- long warm-up (training logs) ----------------------------------------------------------------
#
# Per training series and instance printed per step (``analysis.throughput.warmup_length``):
# the warm-up is the figures before the first that reaches WARMUP_REACH of the steady rate
# (the median of the second half); it is long when its steps are more than
# LONG_WARMUP_SHARE of the steps the series covers, with at least LONG_WARMUP_MIN_ROWS
# figures. Steps, not the time estimate: one first interval that holds a graph build makes the
# estimated time share 51-94% in ordinary TF benchmark runs (shared/realdata/perrank), which
# is no warm-up that could be dropped. Measured step shares (series of >= 15 figures):
# - real logs (shared/realdata trainlog, perrank, scaling, nccl): 0% (DeepSpeed, Megatron,
#   dschat 736 steps, BLOOM), 2.1% (Megatron-DeepSpeed randomltd), 5.0% (TF benchmarks, 18
#   and 4 ranks: the first of 20 intervals), 11.9% (the Lightning issue excerpt, which pastes
#   two runs into one bar); andrewor14_tf_keras_rank0_stderr.log: 58.2% (its rate rises from
#   36 to 9,000 examples/s over the run, reaching half the steady rate only at step 65 of 110);
# - generated logs (tests/fixtures/trainlog/generated): 0-1.0% (HF Trainer, Lightning tqdm and
#   rich bars, DDP, drift/steady).
#: :func:`analysis.throughput.warmup_length`: warm-up lasts until this share of the steady rate
WARMUP_REACH: float = thr.WARMUP_REACH

#: long_warmup: the warm-up's share of the steps above which it is long
LONG_WARMUP_SHARE: float = 0.25

#: long_warmup: figures a series needs to judge its warm-up
LONG_WARMUP_MIN_ROWS: int = 15


register_thresholds(
    Threshold("throughput_straggler", "straggler", 100.0 * STRAGGLER_FRACTION, "%",
              "an instance this far below its series' median after warm-up is a straggler",
              scale=0.01),
    Threshold("throughput_drift", "drift", 100.0 * DRIFT_FRACTION, "%",
              "the last third of an instance's steady figures slower than the first third by "
              "this much", scale=0.01),
    Threshold("long_warmup", "share", 100.0 * LONG_WARMUP_SHARE, "%",
              "the steps before a series first reaches half its steady rate, as a share of "
              "its steps", scale=0.01),
)



def _instance_ranks(ranks: pd.DataFrame | None) -> dict[tuple[str, str], int]:
    """(source, instance) -> rank, for the printers of ``throughput`` rows that carry exactly
    one rank (a launcher prefix, a per-rank file)."""
    if ranks is None or ranks.empty:
        return {}
    r = ranks[ranks["rank"].notna() & ranks["instance"].notna()]
    r = r[["source", "instance", "rank"]].drop_duplicates()  # by codes: then few rows to text
    r = pd.DataFrame({"source": r["source"].astype(str), "instance": r["instance"].astype(str),
                      "rank": r["rank"].astype("int64")}).drop_duplicates()
    one = r.groupby(["source", "instance"])["rank"].transform("size") == 1
    return {(a, b): int(c) for a, b, c in r[one].itertuples(index=False)}


def throughput_stragglers(instances: pd.DataFrame, ranks: pd.DataFrame | None = None,
                          straggler: float = STRAGGLER_FRACTION) -> list[Finding]:
    """Per series of ``throughput.instances`` (``per_instance``): instances more than
    ``straggler`` below the series median; one finding naming the slowest. With ``ranks``
    (``throughput`` rows: source, instance, rank), the finding's ``rank`` is the slowest
    printer's rank where its lines carry one."""
    if instances.empty:
        return []
    instances = instances[instances["scope"].astype("object") != "global"]
    below_all = instances["below_median_pct"].astype("float64")
    if not ((below_all > straggler * 100.0) & instances["instance"].notna()).any():
        return []                   # no series has a named instance that far below
    of_rank = _instance_ranks(ranks)
    out = []
    groups = instances.groupby(thr.SERIES, sort=False, dropna=False, observed=True)
    for key, g in groups:
        v = g["value"].astype("float64")
        below = g["below_median_pct"].astype("float64")
        named = g["instance"].notna()  # an unknown printer cannot be named
        n_slow = int(((below > straggler * 100.0) & named).sum())
        if not n_slow or not v.notna().any():
            continue
        slow = g.loc[v.where(named).idxmin()]
        k = dict(zip(thr.SERIES, key, strict=True))
        unit = tx.unit(k["metric"])
        label = f" ({k['label']})" if not tx.na(k["label"]) else ""
        out.append(Finding(
            "warning", "throughput_straggler", "instance", f"instance {slow['instance']}",
            f"Instance {slow['instance']} is the slowest of {tx.plural(len(g), 'instance')} of "
            f"'{k['name']}'{label} in {k['source']}: {tx.num(slow['value'])} {unit} after "
            f"warm-up, {slow['below_median_pct']:.1f}% below the median of {tx.num(v.median())} "
            f"{unit}; {tx.plural(n_slow, 'instance')} more than {tx.pct(straggler)} below.",
            _series_ev(k["source"], k["name"], k["label"] if label else None, straggler=True),
            "The job waits for its slowest instance at every synchronisation: compare that "
            "instance's node, data shard and input pipeline with the others.",
            rank=of_rank.get((str(k["source"]), str(slow["instance"]))),
            value=float(slow["below_median_pct"]), threshold=100.0 * straggler,
            world_size=len(g), origin=str(k["source"])))
    return out


def job_copies_disagree(job: pd.DataFrame) -> list[Finding]:
    """Runs whose job figure was printed more than once with values more than 5% apart."""
    out = []
    for _, r in job[job["copies_agree"].astype("object") == False].iterrows():  # noqa: E712
        unit = tx.unit(r["metric"])
        out.append(Finding(
            "warning", "job_copies_disagree", "job", f"run {r['run']}",
            f"Run {r['run']}: the figure printed for the whole job, '{r['name']}', comes in "
            f"copies that disagree ({r['rule'].split('; ')[-1]}); {tx.num(r['value'])} {unit} "
            "is shown. Copies of one job figure should be equal: these are different runs in "
            "one file, or a problem.",
            ev("throughput.job", run=r['run'], metric=r['metric'], copies_agree=False),
            "Split the file per run (or label each run's inputs: dptrace LABEL=PATH), or find "
            "which copy belongs to the run you mean; the per-series table lists every copy.",
            value=float(r["value"])))
    return out


def job_check_failed(job: pd.DataFrame) -> list[Finding]:
    """Runs whose job figure disagrees with the other evidence it was checked against."""
    out = []
    for _, r in job[job["check_agrees"].astype("object") == False].iterrows():  # noqa: E712
        unit = tx.unit(r["metric"])
        rng = r["check_range"]
        tol = f"the printed +-{tx.num(rng)}" if not tx.na(rng) else "5%"
        out.append(Finding(
            "warning", "job_check_failed", "job", f"run {r['run']}",
            f"Run {r['run']}: the job figure {tx.num(r['value'])} {unit} ({r['name']}) and "
            f"{r['check_name']} = {tx.num(r['check_value'])} {unit} differ by more than {tol}.",
            ev("throughput.job", run=r['run'], metric=r['metric'], check_agrees=False),
            "A per-device rate times the world size should match the printed total: a gap "
            "means the ranks did not all run at rank 0's rate (stragglers), or the world size "
            "or the figures belong to different runs.",
            value=float(r["check_value"]), threshold=float(r["value"])))
    return out


def throughput_drift(drifts: pd.DataFrame, drift: float = DRIFT_FRACTION,
                     min_rows: int = DRIFT_MIN_ROWS) -> list[Finding]:
    """Per series and instance (``analysis.throughput.drift``): the last third of the steady
    training figures slower than the first third by more than ``drift`` (medians), with at
    least ``min_rows`` steady figures. Global figures count (a whole job slowing down);
    an unknown printer too ("the printer"). When every instance of a series (two or more)
    slowed down, that is the job slowing down in lockstep: one finding for the series, with
    the range of their drops, not one per instance."""
    fired = [r for r in drifts.itertuples(index=False)
             if not tx.na(r.drop_pct) and r.drop_pct > drift * 100.0
             and tx.count(r.steady_rows) >= min_rows]
    series = ("run", "source", "name", "label")
    def key(r: Any) -> tuple:
        return tuple(str(getattr(r, c, "")) for c in series)
    total: dict[tuple, int] = {}
    for r in drifts.itertuples(index=False):
        if not tx.na(r.instance):
            total[key(r)] = total.get(key(r), 0) + 1
    groups: dict[tuple, list[Any]] = {}
    for r in fired:
        groups.setdefault(key(r), []).append(r)
    out = []
    for k, rows in groups.items():
        if len(rows) >= 2 and len(rows) == total.get(k, 0):
            out.append(_drift_of_all(rows, drift))
        else:
            out.extend(_drift_finding(r, drift) for r in rows)
    return out


_DRIFT_HINT = ("A job that slows down as it runs: look at what grows or heats up (thermal "
               "throttling, a filling disk or page cache, memory growth, a competing process on "
               "the node, data that gets slower to read later in the epoch).")


def _drift_finding(r: Any, drift: float) -> Finding:
    d = r.drop_pct
    who = (f"instance {r.instance}" if not tx.na(r.instance)
           else "the job" if str(r.scope) == "global" else "the printer")
    unit = tx.unit(r.metric)
    label = f" ({r.label})" if not tx.na(r.label) else ""
    return Finding(
        "warning", "throughput_drift", "instance" if not tx.na(r.instance) else "job",
        who if who != "the printer" else f"{r.name}",
        f"'{r.name}'{label} of {who} in {r.source} slowed down during the run: the last "
        f"third of its {tx.integer(r.steady_rows)} steady figures has a median of "
        f"{tx.num(r.last_median)} {unit}, {d:.1f}% below the first third's "
        f"{tx.num(r.first_median)} {unit} ({tx.lines(r.first_lineno, r.last_lineno)}).",
        _series_ev(r.source, r.name, r.label if label else None, instance=r.instance),
        _DRIFT_HINT, value=float(d), threshold=100.0 * drift)


def _span(lo: float, hi: float) -> str:
    a, b = tx.num(lo), tx.num(hi)
    return a if a == b else f"{a}-{b}"


def _drift_of_all(rows: list[Any], drift: float) -> Finding:
    """One finding for a series whose every instance slowed down (lockstep: the job)."""
    r = max(rows, key=lambda x: float(x.drop_pct))
    drops = [float(x.drop_pct) for x in rows]
    unit = tx.unit(r.metric)
    label = f" ({r.label})" if not tx.na(r.label) else ""
    firsts = [float(x.first_median) for x in rows]
    lasts = [float(x.last_median) for x in rows]
    return Finding(
        "warning", "throughput_drift", "job", f"{len(rows)} instances",
        f"'{r.name}'{label} in {r.source} slowed down during the run on all {len(rows)} "
        f"instances together: the last third of their steady figures is "
        f"{min(drops):.1f}-{max(drops):.1f}% below the first third (medians "
        f"{_span(min(firsts), max(firsts))} -> {_span(min(lasts), max(lasts))} {unit}); in "
        "lockstep the whole job slowed down.",
        _series_ev(r.source, r.name, r.label if label else None, instance=r.instance),
        _DRIFT_HINT, value=max(drops), threshold=100.0 * drift)


def long_warmup(warmups: pd.DataFrame, share: float = LONG_WARMUP_SHARE,
                min_rows: int = LONG_WARMUP_MIN_ROWS) -> list[Finding]:
    """Per training series and instance printed per step (``analysis.throughput.
    warmup_length``): the figures before the first that reaches half the steady rate (the
    median of the second half) cover more than ``share`` of the series' steps, with at least
    ``min_rows`` figures. The message also tells whether the averages' fixed warm-up
    (``dropped_rows``: the ``warmup`` option) covers it."""
    out = []
    for r in warmups.itertuples(index=False):
        s = r.warmup_step_share
        if tx.na(s) or not s > share or tx.count(r.rows) < min_rows:
            continue
        who = f"instance {r.instance}" if not tx.na(r.instance) else "the printer"
        unit = tx.unit(r.metric)
        label = f" ({r.label})" if not tx.na(r.label) else ""
        dropped = tx.count(r.dropped_rows)
        covered = (f"the averages drop only its first {tx.plural(dropped, 'figure')} as "
                   "warm-up, so they include slow warm-up steps"
                   if dropped < tx.count(r.warmup_rows) else
                   f"the averages drop its first {tx.plural(dropped, 'figure')} as warm-up")
        end = ("it never did" if tx.na(r.warmup_end_step)
               else f"it did at step {tx.integer(r.warmup_end_step)}")
        out.append(Finding(
            "warning", "long_warmup", "instance" if not tx.na(r.instance) else "job",
            who if not tx.na(r.instance) else f"{r.name}",
            f"'{r.name}'{label} of {who} in {r.source} took "
            f"{tx.plural(tx.count(r.warmup_rows), 'figure')} of {tx.integer(r.rows)} (steps "
            f"{tx.integer(r.first_step)}-{tx.integer(r.last_step)}: "
            f"{tx.pct1(float(s))} of the steps, about "
            f"{tx.pct1(float(r.warmup_time_share))} of the time) to reach half its steady rate "
            f"of {tx.num(r.steady_median)} {unit} ({end}); {covered}.",
            _series_ev(r.source, r.name, r.label if label else None, instance=r.instance),
            "A warm-up this long relative to the run: make the run longer before judging its "
            "speed, or drop the warm-up from the averages (dptrace report --warmup); look at "
            "what makes the first steps slow (compilation or graph building, autotuning, cold "
            "caches and data loader start-up) and at a rate that keeps rising (a growing batch "
            "size, a schedule).",
            value=100.0 * float(s), threshold=100.0 * share))
    return out


def truncated_log(summaries: pd.DataFrame) -> list[Finding]:
    """Training logs (or per-rank layouts) with their trainer's training lines but not the
    end-of-run summary it prints when training finishes (``analysis.job.end_summaries``,
    :data:`analysis.job.SUMMARIES`: HF Trainer, Horovod benchmarks): the job was killed or
    the log cut. Kind ``truncated_input``, as for a timeline cut inside a record."""
    out = []
    for r in summaries.itertuples(index=False):
        if tx.flag(r.summary):
            continue
        within = "" if str(r.input) == str(r.file) else f" (input {r.input})"
        out.append(Finding(
            "warning", "truncated_input", "input", str(r.file),
            f"The training log {r.file}{within} has {tx.plural(tx.count(r.lines), 'line')} of "
            f"{r.trainer} training ({tx.lines(r.first_lineno, r.last_lineno)}) but not "
            f"{r.expected}: the job was probably killed, or the log cut, before training "
            "finished.",
            ev("inputs.sources", source=r.file),
            "Figures cover the logged part of the run only, and there is no end-of-run figure "
            "to check them against: look at the end of the log (and the scheduler's) for why "
            "the job stopped (time limit, out of memory, a crash on one rank).",
            value=float(tx.count(r.lines)), threshold=0.0))
    return out


def unknown_world_size(job: pd.DataFrame) -> list[Finding]:
    """Job figures made of per-rank or per-device figures (one printer, a sum or mean over
    the ranks that printed) in a run whose world size nothing states: the whole job's
    throughput is not known."""
    out = []
    partial = job[job["how"].astype("object").isin(("one_printer", "sum_of_ranks",
                                                    "mean_of_ranks"))
                  & job["scope"].astype("object").isin(("instance", "device"))
                  & job["world_size"].isna()
                  # every rank runs the same steps per second: the job's rate is any rank's
                  & ~job["metric"].astype("object").isin(jobfig.SYNCHRONOUS_METRICS)]
    for _, r in partial.iterrows():
        unit = tx.unit(r["metric"])
        printers = tx.count(r["printers"])
        out.append(Finding(
            "info", "unknown_world_size", "job", f"run {r['run']}",
            f"Run {r['run']}: the job figure of {r['input']} for {r['metric']} "
            f"({tx.num(r['value'])} {unit}, {r['how']}) covers the "
            f"{tx.plural(printers, 'printer')} in the log; nothing in the inputs says how many "
            "ranks the job had, so the whole job's throughput is not known.",
            ev("throughput.job", run=r['run'], input=r['input'], metric=r['metric']),
            "Give dptrace every rank's log, or make the job print its world size (WORLD_SIZE, "
            "the launcher's banner, HF Trainer's 'Num processes').",
            value=float(r["value"])))
    return out


#: the rules that name a slow rank, each from its own source (what the message calls it)
STRAGGLER_SOURCES: dict[str, str] = {
    "compute_straggler": "the MPI profiles",
    "negotiation_straggler": "the Horovod timeline",
    "throughput_straggler": "the throughput lines",
}


def _lockstep(instances: pd.DataFrame | None, ranks: pd.DataFrame | None,
              straggler: float) -> tuple[str, Evidence, int] | None:
    """(sentence, evidence, ranks) when the log has a per-rank throughput series (2+ printers
    that are ranks, per-step lines preferred) in which no rank is a straggler: in synchronous
    data parallelism every rank runs at the slowest one's pace, so those lines cannot show
    it."""
    if instances is None or instances.empty:
        return None
    of_rank = _instance_ranks(ranks)
    inst = instances[(instances["scope"].astype(object) != "global")
                     & instances["instance"].notna()]
    best: tuple[int, int, Any, pd.DataFrame] | None = None
    logs: set[str] = set()
    for i, (key, g) in enumerate(inst.groupby(thr.SERIES, sort=False, dropna=False,
                                              observed=True)):
        k = dict(zip(thr.SERIES, key, strict=True))
        named = [of_rank.get((str(k["source"]), str(x))) for x in g["instance"]]
        if len(g) < 2 or any(r is None for r in named) or g["value"].isna().all():
            continue
        logs.add(str(k["source"]))
        if best is None or int(g["rows"].sum()) > best[0]:
            best = (int(g["rows"].sum()), i, k, g)
    if best is None or len(logs) > 1:
        return None                 # none, or several logs: which one is the job's?
    _, _, k, g = best
    below = g["below_median_pct"].astype("float64")
    if (below > 100.0 * straggler).any():
        return None                 # the lines do single one out: not lockstep-equal
    spread = float(below.abs().max())
    return (f"The per-rank throughput lines cannot show it: the {len(g)} ranks' '{k['name']}' "
            f"are within {spread:.2g}% of their median, as every rank of synchronous data "
            "parallelism runs at the slowest one's pace.",
            ev("throughput.instances", source=k["source"], name=k["name"]), len(g))


#: the straggler findings the lockstep sentence of :func:`_lockstep` joins
_LOCKSTEP_JOINS = ("compute_straggler", "negotiation_straggler")


def _job_of_ranks(f: Finding) -> str | None:
    """The job of a finding whose evidence is a row of ``communication.ranks``."""
    for e in f.rows:
        if e.table == "communication.ranks":
            return next((str(v) for k, v in e.key if k == "job"), None)
    return None


def _series_ev(source: object, name: object, label: object = None, **more: object) -> Evidence:
    """A throughput series' row: source, name, the label where the series has one."""
    key = {"source": source, "name": name, **({"label": label} if label is not None else {}),
           **more}
    return ev("throughput.instances", **key)


def cross_source_stragglers(found: list[Finding], instances: pd.DataFrame | None = None,
                            ranks: pd.DataFrame | None = None, sources: int = CROSS_SOURCES,
                            straggler: float = STRAGGLER_FRACTION) -> list[Finding]:
    """The findings of one run, with every rank that ``sources`` or more different straggler
    rules name (:data:`STRAGGLER_SOURCES`: MPI profiles, Horovod timeline, throughput lines),
    from sources that saw the same number of ranks (a directory of unrelated jobs is one run
    too: a 32-rank mpitrace job and a 4-rank timeline are not one job) and that each come
    from one job or file of the run (with two mpitrace jobs, which one is the timeline's?),
    merged into one ``cross_source_straggler`` finding of severity critical that carries all
    their messages and evidence. A compute or negotiation straggler whose run also has
    per-rank throughput lines that are all equal says that those lines cannot show it when
    those lines come from one log with as many ranks as its
    job has, and the run has one such log and one mpitrace job with a straggler; a symptom in
    the straggler's job (``small_message_allreduce``) points to it."""
    # (the lockstep sentence joins only compute and negotiation stragglers' findings)
    lock = _lockstep(instances, ranks, straggler) if any(
        f.kind in _LOCKSTEP_JOINS for f in found) else None
    origins: dict[str, set[str | None]] = {}
    for f in found:
        if f.kind in STRAGGLER_SOURCES:
            origins.setdefault(f.kind, set()).add(f.origin)
    # a kind whose findings come from two jobs or files of the run cannot be paired
    single = {k for k, o in origins.items() if len(o) == 1 and None not in o}
    if len(origins.get("compute_straggler", set())) > 1:
        lock = None
    by_rank: dict[int, list[Finding]] = {}
    for f in found:
        if f.kind in single and f.rank is not None:
            by_rank.setdefault(int(f.rank), []).append(f)
    merged: dict[int, Finding] = {}
    by_rank_merged: set[int] = set()
    for r, fs in by_rank.items():
        kinds = list(dict.fromkeys(f.kind for f in fs))
        worlds = {f.world_size for f in fs}
        if len(kinds) < sources or len(worlds) != 1 or None in worlds:
            continue                # fewer sources, or sources of jobs of different sizes
        by_rank_merged.add(r)
        named = [STRAGGLER_SOURCES[k] for k in kinds]
        said = " ".join(f.message for f in fs)
        rows = tuple(e for f in fs for e in f.rows)
        if lock and "throughput_straggler" not in kinds and lock[2] in worlds:
            said, rows = f"{said} {lock[0]}", (*rows, lock[1])
        lead = next((f for f in fs if f.kind == "compute_straggler"), fs[0])
        merged[r] = Finding(
            "critical", "cross_source_straggler", "rank", f"rank {r}",
            f"Rank {r} is the straggler by {len(kinds)} sources, "
            f"{', '.join(named[:-1])} and {named[-1]}. {said}",
            rows, lead.hint, rank=r, value=float(len(kinds)), threshold=float(sources))
    out: list[Finding] = []
    slow_in: dict[str, list[int]] = {}      # job -> its compute stragglers
    for f in found:
        if f.kind == "compute_straggler" and (job := _job_of_ranks(f)) is not None:
            slow_in.setdefault(job, []).append(int(f.rank or 0))
    for f in found:
        if f.kind in STRAGGLER_SOURCES and f.rank is not None and int(f.rank) in merged:
            out.append(merged.pop(int(f.rank)))   # in the first named finding's place
            continue
        if f.rank is not None and f.kind in STRAGGLER_SOURCES and int(f.rank) in by_rank_merged:
            continue                        # already merged
        if f.kind in ("compute_straggler", "negotiation_straggler") and lock \
                and lock[2] == f.world_size:
            # the evidence stays the one row the finding rests on (the report links it)
            f = replace(f, message=f"{f.message} {lock[0]}")
        out.append(f)
    for i, f in enumerate(out):
        job = f.subject[len("job "):] if f.subject.startswith("job ") else None
        if f.kind == "small_message_allreduce" and job in slow_in:   # the others point too
            who = ", ".join(str(r) for r in slow_in[job])
            out[i] = replace(f, message=f"{f.message} Part of it is the other ranks waiting for "
                             f"rank {who}, a compute straggler (see that finding).")
    return out


def _cross_sources(found: list[Finding], a: Analyses, **kwargs: Any) -> list[Finding]:
    """:func:`cross_source_stragglers` over one run's findings and its throughput tables
    (read only when a finding the lockstep sentence joins is there: nothing else uses
    them)."""
    if not any(f.kind in _LOCKSTEP_JOINS for f in found):
        return cross_source_stragglers(found, None, None, **kwargs)
    return cross_source_stragglers(found, a.get("throughput.instances"),
                                   a.get("throughput.ranks"), **kwargs)


# -- candidates: whether any row could make a rule fire (dptrace.findings.rules.Rule) -----------
# Each tests rows one by one, with a condition the rule's own implies, so that no row of the
# report's tables passing means no run's rows can fire.

def _any(mask: pd.Series) -> bool:
    return bool(mask.fillna(True).to_numpy(dtype=bool).any())


def _may_straggle(instances: pd.DataFrame, ranks: pd.DataFrame | None = None,
                  straggler: float = STRAGGLER_FRACTION) -> bool:
    return _any((instances["scope"].astype("object") != "global")
                & instances["instance"].notna()
                & (instances["below_median_pct"].astype("float64") > straggler * 100.0))


def _may_disagree(job: pd.DataFrame) -> bool:
    return _any(job["copies_agree"].astype("object") == False)  # noqa: E712


def _may_fail_check(job: pd.DataFrame) -> bool:
    return _any(job["check_agrees"].astype("object") == False)  # noqa: E712


def _may_miss_world(job: pd.DataFrame) -> bool:
    return _any(job["world_size"].isna())


def _may_drift(drifts: pd.DataFrame, drift: float = DRIFT_FRACTION,
               min_rows: int = DRIFT_MIN_ROWS) -> bool:
    return _any(drifts["drop_pct"].astype("float64") > drift * 100.0)


def _may_warm_long(warmups: pd.DataFrame, share: float = LONG_WARMUP_SHARE,
                   min_rows: int = LONG_WARMUP_MIN_ROWS) -> bool:
    return _any(warmups["warmup_step_share"].astype("float64") > share)


def _may_be_cut(summaries: pd.DataFrame) -> bool:
    return _any(summaries["summary"].astype("object") != True)  # noqa: E712


register_rules(
    Rule(("throughput_straggler",), ("throughput.instances", "throughput.ranks"),
         throughput_stragglers, 60, _may_straggle),
    Rule(("job_copies_disagree",), ("throughput.job_judged",), job_copies_disagree, 70,
         _may_disagree),
    Rule(("job_check_failed",), ("throughput.job_judged",), job_check_failed, 80,
         _may_fail_check),
    Rule(("unknown_world_size",), ("throughput.job_judged",), unknown_world_size, 90,
         _may_miss_world),
    Rule(("throughput_drift",), ("throughput.drift",), throughput_drift, 100, _may_drift),
    Rule(("long_warmup",), ("throughput.warmup",), long_warmup, 140, _may_warm_long),
    Rule(("truncated_input",), ("throughput.end_summaries",), truncated_log, 150,
         _may_be_cut),
    FindingsRule(("cross_source_straggler",), _cross_sources),
)
