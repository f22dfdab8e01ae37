"""Findings (issue 13, part 2): every check, warning and straggler rule as one table.

Two kinds of test:
- on every real input (tests/fixtures and ../shared/realdata), each proto-finding that today's
  code produces (``communication.checks`` rows, ``small_messages.dominated``,
  ``horovod.timeline_warnings`` rows, throughput stragglers as ``throughput_summary`` counts
  them, the Horovod drawer's red straggler ranks, the tiles drawer's warning lines) appears as
  exactly one finding of its kind whose message holds the same numbers, and no finding exists
  without one;
- rule by rule, on small frames: fires just past its threshold, silent just short of it. The
  thresholds are written out here as numbers, so changing one in the code fails a test.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import _cache
import numpy as np
import pandas as pd
import pytest
from rich.console import Console

import dptrace
from dptrace import schema
from dptrace.findings import Finding, build, frame, rules
from dptrace.formats.horovod import compute as hv
from dptrace.formats.horovod import findings as horovod_findings
from dptrace.formats.mpitrace import communication as comm
from dptrace.formats.mpitrace import findings as mpitrace_findings
from dptrace.formats.sntilestat import compute as tl
from dptrace.formats.sntilestat import findings as sntilestat_findings
from dptrace.formats.trainlog import findings as trainlog_findings
from dptrace.formats.trainlog import job
from dptrace.formats.trainlog import throughput as thr
from dptrace.reports.model import Section
from dptrace.reports.sections.findings import build as findings_section
from dptrace.reports.terminal.findings import draw_findings as draw

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures"
REAL = HERE.parent.parent / "shared" / "realdata"

DIRS = [FIX / "mpitrace", FIX / "horovod", FIX / "sntilestat", FIX / "trainlog", FIX / "straggler",
        FIX / "mpip", REAL / "mpitrace", REAL / "horovod_timeline", REAL / "sntilestat", REAL / "trainlog",
        REAL / "perrank"]

def _load(path: Path) -> dptrace.Dataset:
    """``dptrace.load(path)``, loaded once for all tests (tests/_cache.py): read only."""
    if not path.exists():
        pytest.skip(f"{path} not present")
    return _cache.load(path)


def _build(path: Path) -> pd.DataFrame:
    """``build(dptrace.load(path))``, built once for all tests (tests/_cache.py)."""
    if not path.exists():
        pytest.skip(f"{path} not present")
    return _cache.findings(path)


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _numbers(text: str) -> list[str]:
    return _NUMBER.findall(text)


def _holds(message: str, facts: str) -> None:
    """Every number of ``facts`` (today's detail text) is in ``message``."""
    have = _numbers(message)
    for n in _numbers(facts):
        assert n in have, f"{n!r} of {facts!r} missing from {message!r}"


def _of(found: pd.DataFrame, kind: str) -> pd.DataFrame:
    return found[found["kind"] == kind]


# -- today's proto-findings, from today's code ------------------------------------------------------

#: communication.checks' check -> finding kind
CHECK_KINDS = {"files disagree": "files_disagree", "role claimed twice": "role_claimed_twice",
               "ranks missing": "ranks_missing"}
#: horovod.timeline_warnings' kind -> finding kind
WARNING_KINDS = {"truncated": "truncated_input", "open_intervals": "open_intervals",
                 "unmatched_ends": "unmatched_ends", "cached": "cached_negotiations"}


def _today(ds: dptrace.Dataset) -> list[tuple[str, str, str, str]]:
    """(kind, subject, evidence part, facts) for every check and warning today's code makes."""
    out: list[tuple[str, str, str, str]] = []
    ranks = ds["mpi_ranks"]
    if not ranks.empty:
        for r in comm.checks(ranks).itertuples(index=False):
            role = re.search(r"the (\w+) communication time", r.detail)
            out.append((CHECK_KINDS[r.check], f"job {r.job}",
                        f"comm_role={role.group(1)}" if role else f"job={r.job}", r.detail))
    if not ds["mpi_routines"].empty:
        small = comm.small_messages(ds["mpi_messages"], ds["mpi_routines"])
        for s in small[small["dominated"]].itertuples(index=False):
            # the communication drawer's line: "! 86.4% of the MPI time is in Allreduces of
            # <= 64 B (137,751 calls)"
            out.append(("small_message_allreduce", f"job {s.job}", f"job={s.job}",
                        f"{100 * s.small_share:.1f}% <= 64 B ({s.small_calls:,} calls)"))
        # issue 15: the mean share of elapsed time in MPI above 25%
        summary = comm.job_summary(comm.rank_times(ranks), ds["mpi_jobs"])
        for j in summary[summary["comm_share_mean"] > 0.25].itertuples(index=False):
            out.append(("comm_share_high", f"job {j.job}", f"job={j.job}",
                        f"{100 * j.comm_share_mean:.1f}% {j.comm_mean_s:.2f} s "
                        f"{j.elapsed_max_s:.2f} s"))
    if not ranks.empty:
        out += _compute_stragglers(ds)
        out += _waiting_ranks(ds)
    if not ds["mpi_messages"].empty:
        out += _low_busbw(ds)
    runs = ds["hvd_runs"]
    if not runs.empty:
        for w in hv.timeline_warnings(runs).itertuples(index=False):
            out.append((WARNING_KINDS[w.kind], w.source, f"source={w.source}", w.detail))
        out += _negotiation_stragglers(ds["hvd_ready"])
    tp = ds["throughput"]
    if not tp.empty:
        summary = thr.throughput_summary(tp)
        for s in summary[summary["stragglers"] > 0].itertuples(index=False):
            # the throughput drawer: "slowest instance 3 ... 12.3% below median; 2
            # straggler(s) >5% below"
            out.append(("throughput_straggler", f"instance {s.slowest_instance}",
                        f"source={s.source} name={s.name}",
                        f"{s.instances} {s.slowest_below_median_pct:.1f}% {s.stragglers} 5%"))
        # the job table (issue 14): copies of a job figure that disagree, checks that fail
        jobs = job.job_figures(tp, ds.runs, check_ranges=job.printed_ranges(
            ds["train_metrics"]), metrics=ds["train_metrics"])
        for j in jobs[jobs["copies_agree"].astype("object") == False].itertuples():  # noqa: E712
            out.append(("job_copies_disagree", f"run {j.run}",
                        f"run={j.run} metric={j.metric}", f"{j.name}"))
        for j in jobs[jobs["check_agrees"].astype("object") == False].itertuples():  # noqa: E712
            out.append(("job_check_failed", f"run {j.run}", f"run={j.run} metric={j.metric}",
                        f"{j.name} {j.check_name}"))
        # issue 15: per-rank or per-device job figures with no world size (not it/s)
        partial = jobs[jobs["how"].isin(["one_printer", "sum_of_ranks", "mean_of_ranks"])
                       & jobs["scope"].isin(["instance", "device"]) & jobs["world_size"].isna()
                       & ~jobs["metric"].isin(["iterations_per_s", "steps_per_s",
                                               "batches_per_s"])]
        for j in partial.itertuples():
            out.append(("unknown_world_size", f"run {j.run}",
                        f"run={j.run} input={j.input} metric={j.metric}", ""))
        # issue 15: the last third of 15+ steady figures more than 10% below the first third
        # (every instance of a series, two or more, slowing down: one finding, lockstep)
        drifts = thr.drift(tp)
        series = ["run", "source", "name", "label"]
        fired = drifts[(drifts["drop_pct"] > 10) & (drifts["steady_rows"] >= 15)]
        for _, g in fired.groupby(series, dropna=False, observed=True, sort=False):
            allx = drifts.merge(g[series].drop_duplicates(), on=series)
            if len(g) >= 2 and len(g) == allx["instance"].notna().sum():
                d = g.iloc[0]
                out.append(("throughput_drift", f"{len(g)} instances",
                            f"source={d.source} name={d.name}",
                            f"{g['drop_pct'].min():.1f}-{g['drop_pct'].max():.1f}%"))
                continue
            for d in g.itertuples():
                who = f"instance {d.instance}" if not pd.isna(d.instance) else (
                    "the job" if d.scope == "global" else d.name)
                out.append(("throughput_drift", who, f"source={d.source} name={d.name}",
                            f"{d.drop_pct:.1f}% {d.steady_rows}"))
        # issue 15: 15+ figures per step, more than 25% of the steps before the first figure
        # at half the median of the second half
        for w in thr.warmup_length(tp).itertuples():
            if w.rows >= 15 and w.warmup_step_share > 0.25:
                who = f"instance {w.instance}" if not pd.isna(w.instance) else w.name
                out.append(("long_warmup", who, f"source={w.source} name={w.name}",
                            f"{100 * w.warmup_step_share:.1f}% {w.rows}"))
    # issue 15: HF Trainer loss dicts without train_runtime, Horovod benchmark iterations
    # without a summary line, per run and input
    for e in job.end_summaries(tp, ds["train_metrics"]).itertuples():
        if not e.summary:
            out.append(("truncated_input", str(e.file), f"source={e.file}",
                        f"{e.lines} {e.trainer}"))
    tiles = ds["tiles"]
    if not tiles.empty:
        out += _tile_warnings(tiles)
    return out


def _negotiation_stragglers(ready: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """The negotiation-straggler rule written out plainly from the rank-ready ticks (issue 29;
    thresholds as numbers): a negotiation is compared when 2+ ranks ticked in it, steady when
    it is its tensor's second or later (``op_index`` >= 1); its last rank was waited for when
    its tick came 1 ms or more after the first rank's. A timeline with 10+ compared steady
    negotiations names the rank waited for in >= 50% of them, strictly more often than any
    other rank; one with fewer, and start-up ones, gets ``unjudged_negotiations``; a run whose
    timelines name different ranks names none (``unjudged_negotiations`` too). The Horovod
    drawer marks the same rank in red (tests/test_horovod_steady_section.py)."""
    out: list[tuple[str, str, str, str]] = []
    last = ready[(ready["ranks_ready"] >= 2) & ready["last_ready"]]
    keys = [last["run"].astype(str), last["source"].astype(str)]
    named: dict[str, list[tuple[str, int, str]]] = {}
    for (run, src), g in last.groupby(keys, sort=True):
        later = (g["op_index"] >= 1).fillna(False).to_numpy(bool)
        steady, startup = g[later], g[~later]
        n = len(steady)
        if n >= 10:
            waited = steady.loc[steady["lag_us"] >= 1000, "rank"].value_counts()
            if len(waited) and waited.iloc[0] >= 0.5 * n and (
                    len(waited) == 1 or waited.iloc[0] > waited.iloc[1]):
                r, w = int(waited.index[0]), int(waited.iloc[0])
                named.setdefault(run, []).append(
                    (src, r, f"{w:,} of {n:,} steady-state negotiations ({100 * w / n:.1f}%)"))
        elif len(startup):
            top = int(startup["rank"].value_counts().iloc[0])
            few = f"Only {n} " if n else ""
            out.append(("unjudged_negotiations", src, f"source={src}",
                        f"{few}{len(startup):,} {top:,} of {len(startup):,}"))
    for run_named in named.values():
        if len({r for _, r, _ in run_named}) > 1:
            src = run_named[0][0]
            out.append(("unjudged_negotiations", src, f"source={src}",
                        " ".join(f"rank {r}" for _, r, _ in run_named)))
            continue
        out += [("negotiation_straggler", f"rank {r}", f"source={src} rank={r}", facts)
                for src, r, facts in run_named]
    return out


def _waiting_ranks(ds: dptrace.Dataset) -> list[tuple[str, str, str, str]]:
    """The waiting-rank rule written out plainly (issue 29; thresholds as numbers): in a job of
    3+ ranks, the rank with the most MPI time, above the next rank's by >= 2% of the elapsed
    time, above the others' median by >= 2% of it and >= 4 median absolute deviations of
    theirs (floored at 0.005 s), with that median at most half its own."""
    out = []
    rt = comm.rank_times(ds["mpi_ranks"])
    for key, g in rt.groupby(["run", "job"] if "run" in rt else ["job"], observed=True):
        g = g[g["comm_time_s"].notna() & g["elapsed_s"].notna()]
        if len(g) < 3:
            continue
        elapsed = g["elapsed_s"].max()
        top = g.loc[g["comm_time_s"].idxmax()]
        r, mine = int(top["rank"]), float(top["comm_time_s"])
        others = g.loc[g["rank"] != r, "comm_time_s"]
        med = others.median()
        spread = max((others - med).abs().median(), 0.005)
        gap = mine - med
        if (mine - others.max() >= 0.02 * elapsed and gap >= 0.02 * elapsed
                and gap >= 4 * spread and med <= 0.5 * mine):
            out.append(("waiting_rank", f"rank {r}", f"job={key[-1]} rank={r}",
                        f"rank {r} job {key[-1]} {100 * mine / elapsed:.1f}% "
                        f"{100 * med / elapsed:.1f}%"))
    return out


def _low_busbw(ds: dptrace.Dataset) -> list[tuple[str, str, str, str]]:
    """low_busbw written out plainly (issue 15): per job, collective bins of messages all over
    1 MiB holding >= 1% of the job's time in the message-size table, below 50% of the busbw of
    the job's best bin; one finding naming the slowest."""
    out = []
    bins = comm.message_sizes(ds["mpi_messages"])
    for key, g in bins.groupby(["run", "job"], observed=True):
        g = g[g["time_s"].notna()]
        best = g["busbw_bytes_per_s"].max()
        share = g["time_s"] / g["time_s"].sum()
        slow = g[(g["bin_lo_bytes"] > 2 ** 20) & (share >= 0.01)
                 & (g["busbw_bytes_per_s"] < 0.5 * best)]
        if len(slow):
            worst = slow.loc[slow["busbw_bytes_per_s"].idxmin()]
            out.append(("low_busbw", f"job {key[1]}",
                        f"job={key[1]} routine={worst['routine']} bin={worst['bin']}",
                        f"{worst['busbw_bytes_per_s'] / 1e9:.3g} GB/s "
                        f"{100 * worst['busbw_bytes_per_s'] / best:.1f}% "
                        f"{best / 1e9:.3g} GB/s"))
    return out


def _compute_stragglers(ds: dptrace.Dataset) -> list[tuple[str, str, str, str]]:
    """The compute-straggler rule written out plainly (issue 15; thresholds as numbers: a gap
    below the other ranks' median MPI time of >= 2% of the elapsed time and >= 4 median
    absolute deviations of the others, floored at 0.005 s; 3+ ranks; where two rank profiles
    exist, >= 50% of the others' extra time, routine by routine, in collectives)."""
    out = []
    rt = comm.rank_times(ds["mpi_ranks"])
    routines = ds["mpi_routines"]
    for key, g in rt.groupby(["run", "job"] if "run" in rt else ["job"], observed=True):
        job = key[-1]
        g = g[g["comm_time_s"].notna()]
        if len(g) < 3:
            continue
        elapsed = g["elapsed_s"].max()
        for r, c in zip(g["rank"], g["comm_time_s"], strict=True):
            others = g.loc[g["rank"] != r, "comm_time_s"]
            gap = others.median() - c
            spread = max((others - others.median()).abs().median(), 0.005)
            if not (gap >= 0.02 * elapsed and gap >= 4 * spread):
                continue
            prof = routines[(routines["job"] == job) & (routines["run"] == key[0])] \
                if "run" in routines else routines[routines["job"] == job]
            t = prof.pivot_table(index="rank", columns="routine", values="time_s",
                                 aggfunc="sum", observed=True).fillna(0.0)
            if r in t.index and len(t) > 1:
                extra = (t.drop(index=r).median() - t.loc[r]).clip(lower=0)
                coll = sum(v for k, v in extra.items() if k not in
                           ("MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Wait",
                            "MPI_Waitall", "MPI_Sendrecv", "MPI_Comm_rank", "MPI_Comm_size"))
                if extra.sum() > 0 and coll < 0.5 * extra.sum():
                    continue
            out.append(("compute_straggler", f"rank {r}", f"job={job} rank={r}",
                        f"rank {r} job {job}"))
    return out


def _tile_warnings(tiles: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """What the tiles drawer's ``_warnings`` printed before the findings took them over
    (checked against the drawer itself while it printed them, in the commit that made the
    findings), from the tiles analysis with its conditions written out."""
    return _tile_warnings_as_drawn(tl.idle_tiles(tiles), tl.instances(tiles))


def _tile_warnings_as_drawn(idle: pd.DataFrame,
                            inst: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    """What the tiles drawer's ``_warnings`` printed (before the findings replaced it), from
    the tiles analysis with its conditions written out."""
    out = []
    for src, g in idle[idle["always_idle"]].groupby(idle["source"].astype(str)):
        out.append(("idle_tiles", src, f"source={src}",
                    f"warning: {len(g)} tile(s) idle in every snapshot"))
    # issue 15: %exec below 50%, load + checkpoint above 10% (conditions written out)
    for r in inst[inst["exec_mean_pct"] < 50].itertuples(index=False):
        out.append(("low_exec", f"PID {r.pid}", f"pid={r.pid}", f"{r.exec_mean_pct:.1f}%"))
    load = inst[["pload_mean_pct", "aload_mean_pct", "chkpt_mean_pct"]].fillna(0).sum(axis=1)
    for r, total in zip(inst.itertuples(index=False), load, strict=True):
        if total > 10:
            out.append(("load_overhead", f"PID {r.pid}", f"pid={r.pid}", f"{total:.1f}%"))
    for src, g in inst.groupby(inst["source"].astype(str)):
        if len(g) > 1:
            low = g[g["lowest"]].iloc[0]
            out.append(("lowest_exec_instance", f"PID {low['pid']}",
                         f"source={src} pid={low['pid']}",
                         f"lowest %exec: PID {low['pid']} at {low['exec_mean_pct']:.1f}% "
                         f"(instances' median {g['exec_mean_pct'].median():.1f}%)"))
    return out


@pytest.mark.parametrize("path", DIRS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_check_and_warning_of_today_is_one_finding(path):
    ds = _load(path)
    found = _build(path)
    expected = _today(ds)
    used: set[int] = set()
    for kind, subject, evidence, facts in expected:
        mine = found[(found["kind"] == kind) & (found["subject"] == subject)
                     & found["evidence"].str.contains(evidence, regex=False)]
        mine = mine[~mine.index.isin(used)]
        assert len(mine), f"no {kind} finding for {subject} ({evidence}): {facts}"
        row = mine.iloc[0]
        used.add(mine.index[0])
        _holds(row["message"], facts)
        assert subject.split(" ", 1)[-1] in row["message"]
    # NCCL's findings are new (issue 17): no check of before stands behind them; they are
    # tested against the logs' own lines in tests/test_nccl.py
    extra = found[~found.index.isin(used) & ~found["kind"].astype(str).str.startswith("nccl_")]
    assert extra.empty, f"findings with no check behind them:\n{extra[['kind', 'message']]}"


def test_real_data_has_every_kind():
    """The real inputs exercise each rule at least once (so the test above covers them all)."""
    kinds: set[str] = set()
    for path in DIRS:
        if path.exists():
            kinds |= set(_build(path)["kind"].astype(str))
    # NCCL's logs: sockets on a multi-node job (perrank/ above and the fixtures), timeouts (the
    # fixtures), no GPUDirect RDMA (a 4-node Omni-Path benchmark). No real log shows NCCL choosing two networks in one job or an NCCL error code:
    # those two rules are tested on made lines in tests/test_nccl.py
    for nccl in (FIX / "nccl", REAL / "nccl" / "bigscience_all_reduce_bench-32gb-n4.txt"):
        if nccl.exists():   # (a directory of unrelated logs is one run: load the file)
            kinds |= set(_build(nccl)["kind"].astype(str))
    # no real input has two sources naming one rank (a Horovod timeline or per-rank throughput
    # lines that single out the rank mpitrace names): cross_source_straggler is tested on
    # real findings of two inputs in tests/test_findings_straggler.py
    missing = set(rules.kinds()) - kinds - {"truncated_input", "nccl_no_gdrdma"} \
        if not REAL.exists() else \
        set(rules.kinds()) - kinds
    missing -= {"cross_source_straggler"}
    missing -= {"nccl_mixed_networks", "nccl_error"}
    # PyTorch profiler traces are not among DIRS: collective_straggler is tested on the
    # slowed and balanced 2-rank runs in tests/test_torchtrace.py
    missing -= {"collective_straggler"}
    # no real run holds nccl-tests beside the job's own evidence: below_system_busbw is tested
    # on real files of comparable systems paired in tests/test_job_vs_system.py
    missing -= {"below_system_busbw"}
    assert not missing, missing


def test_messages_are_plain_sentences():
    for path in (FIX / "mpitrace", FIX / "horovod", FIX / "sntilestat"):
        for m in _build(path)["message"]:
            assert m[0].isupper() or m[0].isdigit(), m
            assert m.endswith("."), m
            assert "\n" not in m and "[" not in m.replace(str(path), ""), m


# -- the table ---------------------------------------------------------------------------------------

def test_findings_table_is_in_the_schema():
    t = schema.TABLES["findings"]
    # what a reader needs first comes first (the HTML shows the columns in this order)
    assert t.names == ["run", "severity", "message", "hint", "kind", "scope", "subject",
                       "rank", "value", "threshold", "evidence", "evidence_table",
                       "evidence_key"]
    assert "findings" in set(schema.describe()["table"])
    assert "### `findings`" in schema.markdown()


def test_build_returns_the_schema_dtypes_in_order():
    ds = _load(FIX / "horovod")
    found = _build(FIX / "horovod")
    want = {c.name: c.dtype for c in schema.TABLES["findings"].columns}
    assert {c: str(d) for c, d in found.dtypes.items()} == want
    # a folder of unrelated timelines is one run per job: each file is its own run
    assert set(found["run"].astype(str)) <= set(ds.run_ids)
    rank0 = found[found["kind"] == "negotiation_straggler"]
    assert "andrewor14_horovod_timeline_2019_4rank.json" in set(rank0["run"].astype(str))
    sev = found["severity"].map({"critical": 0, "warning": 1, "info": 2}).tolist()
    assert sev == sorted(sev)
    for (_, _), g in found.groupby(["severity", "kind"], observed=True):
        v = g["value"].dropna().tolist()
        assert v == sorted(v, reverse=True)
    # severity, then kind
    keys = list(zip(sev, found["kind"].astype(str), strict=True))
    assert keys == sorted(keys)


def test_no_input_no_findings():
    ds = _load(FIX / "trainlog")
    empty = build(dptrace.Dataset({}, ds.sources.head(0), ds.problems.head(0)))
    assert empty.empty and list(empty.columns) == schema.TABLES["findings"].names


def test_frame_orders_critical_first_then_kind_then_value():
    f = frame([
        Finding("info", "b", "job", "x", "M.", "e"),
        Finding("warning", "b", "job", "y", "M.", "e", value=1.0),
        Finding("warning", "b", "job", "z", "M.", "e", value=9.0),
        Finding("warning", "a", "job", "w", "M.", "e"),
        Finding("critical", "z", "job", "v", "M.", "e"),
    ])
    assert f["subject"].tolist() == ["v", "w", "z", "y", "x"]


def test_finding_rejects_unknown_severity_and_scope():
    with pytest.raises(ValueError):
        Finding("error", "k", "job", "s", "M.", "e")
    with pytest.raises(ValueError):
        Finding("info", "k", "node", "s", "M.", "e")


def test_findings_do_not_import_reports():
    code = ("import sys, dptrace.findings, dptrace.findings.rules, dptrace.findings.thresholds; "
            "bad = [m for m in sys.modules if m.startswith('dptrace.reports')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


# -- the section and its drawer ------------------------------------------------------------------

def _render(renderable, width: int = 100) -> str:
    console = Console(width=width, color_system=None, record=True, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_section_on_real_data_renders_each_finding():
    ds = _load(FIX / "mpitrace")
    section = findings_section(ds, {})
    assert (section.name, section.title) == ("findings", "Findings") and section.caption
    table = section.tables["findings"]
    assert len(table) == 33   # 15, issue 15's 8 compute stragglers in 6 jobs, 9 MPI shares over
    # 25%, 1 low bus bandwidth (the ThetaGPU guide's 4-8 MiB Allreduces)
    text = " ".join(_render(draw(section)).split())
    assert text.startswith("Findings")
    for r in table.itertuples(index=False):
        assert f"{r.severity} " in text
        assert " ".join(str(r.message).split()) in text
        assert " ".join(str(r.evidence).split()) not in text   # in JSON and HTML, not here
        if r.hint:
            assert " ".join(str(r.hint).split()) in text
    assert text.count("critical ") == 1   # files disagree, job 359819


def test_section_without_findings_says_so():
    ds = _load(FIX / "trainlog")
    quiet = dptrace.Dataset({}, ds.sources.head(0), ds.problems.head(0))
    section = findings_section(quiet, {})
    assert section.tables["findings"].empty
    assert _render(draw(section)).strip().splitlines()[-1] == "no findings"


def test_draw_takes_brackets_literally():
    f = frame([Finding("warning", "k", "input", "[bold]x[/bold]", "File [red]a[/red] is cut.",
                       "horovod.runs source=[red]a[/red]")])
    section = Section("findings", "Findings", "c", {"findings": f})
    out = _render(draw(section))
    assert "File [red]a[/red] is cut." in out


def test_section_passes_warmup_on():
    tp = _tp([100.0, 100.0, 100.0, 100.0], steps=10)
    # instance 3's first two steps are slow: the second counts unless 30% are warm-up
    tp.loc[(tp["instance"] == "3") & (tp["step"] <= 2), "value"] = 10.0
    ds = dptrace.Dataset({"throughput": tp}, _empty("sources"), _empty("problems"))
    assert len(build(ds)) == 1                  # 10%: step 1 of 10 dropped, 10% below
    assert build(ds, warmup=0.3).empty          # steps 1-3 dropped
    assert findings_section(ds, {"warmup": 0.3}).tables["findings"].empty
    assert findings_section(ds, {}).tables["findings"]["kind"].tolist() == [
        "throughput_straggler"]


# -- rule by rule --------------------------------------------------------------------------------

def _empty(name: str) -> pd.DataFrame:
    return schema.TABLES[name].empty()


def _tp(values: list[float], steps: int = 1) -> pd.DataFrame:
    rows = []
    for i, v in enumerate(values):
        for s in range(1, steps + 1):
            rows.append({"source": "log", "instance": str(i), "pattern": "sambaflow",
                         "name": "e2e samples_per_sec", "metric": "samples_per_s", "value": v,
                         "scope": "instance", "phase": "train", "step": s if steps > 1 else None,
                         "lineno": 10 * i + s})
    return schema.conform(pd.DataFrame(rows), schema.TABLES["throughput"])


@pytest.mark.parametrize("slow,fires", [(94.9, True), (95.1, False), (100.0, False)])
def test_throughput_straggler_is_5_pct_below_median(slow, fires):
    found = trainlog_findings.throughput_stragglers(thr.per_instance(_tp([100.0, 100.0, 100.0, slow])))
    assert bool(found) is fires
    if fires:
        f = found[0]
        assert (f.kind, f.severity, f.scope, f.subject) == ("throughput_straggler", "warning",
                                                            "instance", "instance 3")
        assert f.threshold == 5.0 and f.value == pytest.approx(100 - slow)
        assert "5.1% below the median of 100 samples/s" in f.message
        assert "1 instance more than 5% below" in f.message


def test_throughput_straggler_one_finding_per_series_naming_the_slowest():
    found = trainlog_findings.throughput_stragglers(thr.per_instance(_tp([100.0, 100.0, 90.0, 80.0, 100.0])))
    assert len(found) == 1 and found[0].subject == "instance 3"
    assert "2 instances more than 5% below" in found[0].message


def _mpi_ranks(rows: list[dict]) -> pd.DataFrame:
    base = {"source": "f", "job": "7", "nranks": 4}
    return schema.conform(pd.DataFrame([{**base, **r} for r in rows]), schema.TABLES["mpi_ranks"])


@pytest.mark.parametrize("diff,fires", [(0.007, True), (0.005, False)])
def test_files_disagree_beyond_the_tables_rounding(diff, fires):
    ranks = _mpi_ranks([
        {"rank": 1, "origin": "own", "comm_time_s": 1.0, "elapsed_s": 10.0},
        {"rank": 1, "origin": "rank0_table", "comm_time_s": 1.0, "elapsed_s": 10.0 + diff},
    ])
    found = mpitrace_findings.files_disagree(comm.rank_times(ranks))
    assert bool(found) is fires
    if fires:
        assert found[0].severity == "critical" and found[0].subject == "job 7"
        assert "1 rank (1)" in found[0].message and "0.006 s" in found[0].message


@pytest.mark.parametrize("claims,fires", [(2, True), (1, False)])
def test_role_claimed_twice(claims, fires):
    ranks = _mpi_ranks([{"rank": r, "origin": "own", "comm_time_s": 1.0, "elapsed_s": 2.0,
                         "comm_role": "maximum"} for r in range(claims)])
    found = mpitrace_findings.role_claimed_twice(ranks)
    assert bool(found) is fires
    if fires:
        assert "2 rank files say they had the maximum" in found[0].message


@pytest.mark.parametrize("listed,fires", [(3, True), (4, False)])
def test_ranks_missing(listed, fires):
    ranks = _mpi_ranks([{"rank": r, "origin": "rank0_table", "comm_time_s": 1.0,
                         "elapsed_s": 2.0} for r in range(listed)])
    found = mpitrace_findings.ranks_missing(comm.rank_times(ranks))
    assert bool(found) is fires
    if fires:
        assert "lists 3 of 4 ranks" in found[0].message
        assert (found[0].value, found[0].threshold) == (3.0, 4.0)


@pytest.mark.parametrize("share,fires", [(0.501, True), (0.5, False), (np.nan, False)])
def test_small_message_allreduce_above_half_the_mpi_time(share, fires):
    small = pd.DataFrame({"job": ["9"], "ranks": [2], "mpi_time_s": [10.0],
                          "small_time_s": [10.0 * share], "small_calls": [1234],
                          "small_share": [share]})
    found = mpitrace_findings.small_message_allreduce(small)
    assert bool(found) is fires
    if fires:
        f = found[0]
        assert f.threshold == 50.0 and f.value == pytest.approx(50.1)
        assert "50.1% of job 9's MPI time (5.01 s of 10.00 s)" in f.message
        assert "at most 64 bytes (1,234 calls)" in f.message


def test_small_messages_bins_up_to_64_bytes():
    """The size limit comes from the analysis: a bin up to 64 B is small, 128 B is not."""
    def job(hi: int) -> pd.DataFrame:
        m = pd.DataFrame({"job": ["1"], "rank": [0], "routine": ["MPI_Allreduce"],
                          "bin_hi_bytes": [hi], "calls": [10], "time_s": [9.0]})
        r = pd.DataFrame({"job": ["1"], "rank": [0], "routine": ["MPI_Allreduce"],
                          "time_s": [10.0]})
        return comm.small_messages(m, r)
    assert mpitrace_findings.small_message_allreduce(job(64))
    assert not mpitrace_findings.small_message_allreduce(job(128))


def _runs(**kw) -> pd.DataFrame:
    row = {"source": "t.json", "truncated": False, "open_intervals": 0, "unmatched_ends": 0,
           "negotiations": 10, "negotiations_with_ticks": 10}
    return pd.DataFrame([{**row, **kw}])


@pytest.mark.parametrize("rule,fire,quiet,kind,severity", [
    (horovod_findings.truncated_input, {"truncated": True}, {}, "truncated_input", "warning"),
    (horovod_findings.open_intervals, {"open_intervals": 1}, {}, "open_intervals", "warning"),
    (horovod_findings.unmatched_ends, {"unmatched_ends": 1}, {}, "unmatched_ends", "info"),
    (horovod_findings.cached_negotiations, {"negotiations_with_ticks": 9}, {"negotiations": 0,
                                                               "negotiations_with_ticks": 0},
     "cached_negotiations", "info"),
])
def test_timeline_rules(rule, fire, quiet, kind, severity):
    found = rule(_runs(**fire))
    assert [(f.kind, f.severity, f.scope, f.subject) for f in found] == [
        (kind, severity, "input", "t.json")]
    assert not rule(_runs(**quiet))
    # the same facts as the analysis' warning
    detail = hv.timeline_warnings(_runs(**fire))["detail"].iloc[0]
    _holds(found[0].message, detail)


def _phases(shares: list[float], n: int = 100, phase: str = "steady") -> pd.DataFrame:
    """A timeline's ``horovod.stragglers`` rows (``phase_stragglers``) of one phase: rank i
    waited for in ``shares[i]`` of ``n`` compared negotiations."""
    waited = [round(s * n) for s in shares]
    return pd.DataFrame({"source": "t.json", "phase": phase, "rank": range(len(shares)),
                         "negotiations": n, "compared": n, "broadcasts": 0, "last": waited,
                         "waited": waited, "waited_share": [w / n for w in waited],
                         "mean_lag_us": 1500.0, "p95_lag_us": 2000.0, "max_lag_us": 2.5e6,
                         "steady_from_us": 1.2e6})


@pytest.mark.parametrize("shares,fires", [([0.5, 0.5], []), ([0.49, 0.51], [1]),
                                          ([0.5, 0.2, 0.3], [0]), ([0.49, 0.2, 0.31], []),
                                          ([1.0], [])])
def test_negotiation_straggler_waited_for_in_half_and_alone(shares, fires):
    """A rank waited for in >= 50% of the steady state and more often than any other: a 0.5
    / 0.5 tie names neither (one run never names two ranks), one rank compared names none."""
    found = horovod_findings.negotiation_stragglers(_phases(shares))
    assert [f.rank for f in found] == fires
    for f in found:
        assert (f.kind, f.scope, f.threshold) == ("negotiation_straggler", "rank", 50.0)
        assert f"in {round(shares[f.rank] * 100)} of 100 steady-state negotiations" in f.message
        assert "1.5 ms after the first rank's on average (max 2.50 s)" in f.message


@pytest.mark.parametrize("n,fires", [(10, True), (9, False)])
def test_negotiation_straggler_needs_10_steady_negotiations(n, fires):
    """Fewer than 10 compared steady-state negotiations name nobody; with start-up ticks
    beside them, the timeline is said to be unjudged."""
    steady = _phases([1.0, 0.0], n)
    found = horovod_findings.negotiation_stragglers(steady)
    assert [f.kind for f in found] == (["negotiation_straggler"] if fires else [])
    both = pd.concat([_phases([1.0, 0.0], 21, "startup"), steady], ignore_index=True)
    kinds = [f.kind for f in horovod_findings.negotiation_stragglers(both)]
    assert kinds == (["negotiation_straggler"] if fires else ["unjudged_negotiations"])


def test_start_up_alone_is_never_judged():
    """Rank 0 last in every start-up negotiation: no straggler, an info finding that says so."""
    found = horovod_findings.negotiation_stragglers(_phases([1.0, 0.0], 21, "startup"))
    assert [(f.kind, f.severity, f.scope, f.subject) for f in found] == [
        ("unjudged_negotiations", "info", "input", "t.json")]
    assert "At start-up rank 0 was last in 21 of 21" in found[0].message


def _tiles(rows: list[dict]) -> pd.DataFrame:
    base = {"source": "cap", "snapshot": 0, "xrdu": 0, "rdu": 0, "exec_pct": 0.0}
    return schema.conform(pd.DataFrame([{**base, **r} for r in rows]), schema.TABLES["tiles"])


@pytest.mark.parametrize("idle_pct,fires", [(99.9, True), (99.8, False)])
def test_idle_tiles_at_999_pct_without_a_pid(idle_pct, fires):
    tiles = _tiles([{"tile": 0, "idle_pct": idle_pct},
                    {"tile": 1, "idle_pct": 0.0, "exec_pct": 90.0, "pid": 42}])
    found = sntilestat_findings.idle_tiles(tl.idle_tiles(tiles))
    assert bool(found) is fires
    if fires:
        assert found[0].message.startswith("1 tile(s) of cap were idle in every snapshot")


def test_idle_tiles_only_when_idle_in_every_snapshot():
    tiles = _tiles([{"tile": 0, "idle_pct": 100.0},
                    {"tile": 0, "snapshot": 1, "idle_pct": 0.0, "exec_pct": 50.0, "pid": 7}])
    assert not sntilestat_findings.idle_tiles(tl.idle_tiles(tiles))


@pytest.mark.parametrize("pids,fires", [([1, 2, 3], True), ([1], False)])
def test_lowest_exec_instance_needs_two_instances(pids, fires):
    tiles = _tiles([{"tile": i, "idle_pct": 0.0, "exec_pct": 50.0 + 10 * i, "pid": p}
                    for i, p in enumerate(pids)])
    found = sntilestat_findings.lowest_exec_instance(tl.instances(tiles))
    assert bool(found) is fires
    if fires:
        f = found[0]
        assert (f.subject, f.severity, f.value) == ("PID 1", "info", 50.0)
        assert "50.0% (instances' median 60.0%)" in f.message


def test_every_rule_is_listed_once():
    assert len(rules.kinds()) == len(set(rules.kinds())) == 32
    doc = (HERE.parent / "docs" / "findings.md").read_text(encoding="utf-8")
    readme = (HERE.parent / "README.md").read_text(encoding="utf-8")
    kinds_doc = next(c.doc for c in schema.TABLES["findings"].columns if c.name == "kind")
    for kind in rules.kinds():
        assert kind in doc and kind in kinds_doc and f"| `{kind}` |" in readme, kind
    # the compare and scaling rules: in the kind column's text and the README's table of
    # the Compare and scaling section
    from dptrace.findings import runs as run_rules

    views = readme[readme.index("## Compare and scaling"):]
    for kind in run_rules.KINDS:
        assert kind in kinds_doc and f"| `{kind}` |" in views, kind


def test_rules_skip_missing_values():
    """A missing count or %exec is nothing to report, never a crash."""
    runs = _runs().astype({"open_intervals": "Int64", "unmatched_ends": "Int64",
                           "negotiations_with_ticks": "Int64"})
    runs.loc[0, ["open_intervals", "unmatched_ends", "negotiations_with_ticks"]] = pd.NA
    runs["truncated"] = pd.array([pd.NA], dtype="boolean")
    for rule in (horovod_findings.truncated_input, horovod_findings.open_intervals, horovod_findings.unmatched_ends,
                 horovod_findings.cached_negotiations):
        assert not rule(runs)
    inst = pd.DataFrame({"source": "cap", "pid": [1, 2], "exec_mean_pct": [np.nan, np.nan],
                         "lowest": [False, False]})
    assert not sntilestat_findings.lowest_exec_instance(inst)
