"""The Horovod section's straggler table and drawer judge the steady state, as the finding does
(issue 29, 3.2): the rank marked in red (terminal), in the figure and in the ``straggler``
column is the one ``negotiation_straggler`` names, and no other; start-up alone is never
red. Counts are read from the timelines with json here, not from dptrace's tables."""

from __future__ import annotations

import io
import re
from pathlib import Path

import _cache
import pytest
from horovod_ticks import negotiations
from rich.console import Console

import dptrace
from dptrace.formats.horovod import figures as fh
from dptrace.formats.horovod.sections import build as horovod_section
from dptrace.formats.horovod.terminal import draw_horovod
from dptrace.reports.evidence import first, locate

FIX = Path(__file__).parent / "fixtures"
RANK4 = FIX / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json"
SYNTH = FIX / "horovod" / "synthetic_v0201_packed.json"
NORMAL = FIX / "horovod_mpi" / "normal"
DELAYED = FIX / "horovod_mpi" / "delayed_r2"
RED = re.compile(r"\x1b\[[0-9;]*31m")
#: the timelines and runs are loaded once per process (tests/_cache.py) and only read here


def _ticks(path: Path) -> tuple[dict[int, int], dict[int, int], int]:
    """(start-up last counts by rank, steady waited counts by rank, steady compared) of a
    timeline, from its events: one negotiation = a B NEGOTIATE_* of a pid and the X rank
    ticks before its E; compared with ticks of 2+ ranks; steady = the pid's second or later;
    waited = last, 1 ms or more after the first tick."""
    startup: dict[int, int] = {}
    waited: dict[int, int] = {}
    steady = 0
    for _, nth, ticks in negotiations(path):
        if len({r for _, r in ticks}) < 2:
            continue
        (t_last, last), (t_first, _) = max(ticks), min(ticks)
        if nth == 0:
            startup[last] = startup.get(last, 0) + 1
        else:
            steady += 1
            if t_last - t_first >= 1000:
                waited[last] = waited.get(last, 0) + 1
    return startup, waited, steady


def _draw(ds: dptrace.Dataset, opts: dict | None = None) -> tuple[str, str]:
    """(plain text, text with ANSI styles) of the section's terminal drawing."""
    section = horovod_section(ds, opts or {})
    console = Console(width=120, record=True, force_terminal=True, color_system="standard",
                      file=io.StringIO())
    console.print(draw_horovod(section))
    return console.export_text(clear=False), console.export_text(styles=True)


def _rank_line(text: str, rank: int) -> str:
    return next(line for line in text.splitlines()
                if re.match(rf"^│\s+{rank}\s", re.sub(r"\x1b\[[0-9;]*m", "", line)))


def test_a_balanced_run_s_start_up_rank_is_not_red():
    """The real balanced 3-rank run (response cache on): rank 1 was last in 19 of its 21
    start-up negotiations and there is no steady-state tick. The old table put it in red
    (last in >= 50%); start-up is warm-up, so nothing is red and the drawer says why."""
    startup, waited, steady = _ticks(NORMAL / "timeline.json")
    assert (startup[1], sum(startup.values()), steady) == (19, 21, 0)
    ds = _cache.load(NORMAL)
    t = horovod_section(ds, {}).tables["stragglers"]
    assert not t["straggler"].any() and (t["steady_compared"] == 0).all()
    row = t[t["rank"] == 1].iloc[0]
    assert (row["last"], row["negotiations"]) == (19, 21)
    plain, styled = _draw(ds)
    assert "none ticked: all 21 are start-up" in " ".join(plain.split())
    assert not RED.search(_rank_line(styled, 1))
    fig = horovod_section(ds, {}).figures["file1_stragglers"]
    assert fh.STRAGGLER not in list(fig.data[0].marker.color)
    assert "negotiation_straggler" not in set(dptrace.findings(ds)["kind"].astype(str))


@pytest.mark.parametrize("path,rank", [(RANK4, 0), (SYNTH, 3)])
def test_the_steady_state_straggler_is_red_with_the_finding_s_numbers(path, rank):
    _, waited, steady = _ticks(path)
    ds = _cache.load(path)
    t = horovod_section(ds, {}).tables["stragglers"]
    assert t["straggler"].tolist() == [True] + [False] * (len(t) - 1)
    row = t.iloc[0]
    assert (row["rank"], row["steady_compared"], row["steady_waited"]) == (
        rank, steady, waited[rank])
    assert row["steady_waited_share"] == pytest.approx(waited[rank] / steady)
    plain, styled = _draw(ds)
    assert f"rank {rank} is the straggler ({waited[rank]:,} of {steady:,})" in \
        " ".join(plain.split())
    assert RED.search(_rank_line(styled, rank))
    for other in set(t["rank"]) - {rank}:
        assert not RED.search(_rank_line(styled, int(other)))
    f = dptrace.findings(ds)
    f = f[f["kind"] == "negotiation_straggler"]
    assert f["rank"].tolist() == [rank]
    assert f"in {waited[rank]:,} of {steady:,} steady-state negotiations" in f["message"].iloc[0]


@pytest.mark.parametrize("path", [RANK4, SYNTH, NORMAL, DELAYED, FIX / "horovod"])
def test_marked_ranks_are_the_finding_s_and_its_evidence_row(path):
    """The report's straggler column and its negotiation_straggler findings agree, and each
    finding's evidence resolves to its marked row (the HTML link)."""
    report = dptrace.report(_cache.load(path))
    t = report.tables["horovod.stragglers"]
    found = report.tables["findings.findings"]
    found = found[found["kind"] == "negotiation_straggler"]
    marked = {(str(r.source), int(r.rank)) for r in t[t["straggler"]].itertuples()}
    named = set()
    for f in found.itertuples():
        _, _, row = locate(report.tables, *first(f), f.run)
        assert row is not None and bool(t["straggler"].iloc[row]), f.evidence
        named.add((str(t["source"].iloc[row]), int(f.rank)))
    assert marked == named


def test_a_threshold_override_moves_the_mark_with_the_finding():
    """Rank 3 of the synthetic timeline is waited for in 75.3% of the steady state: at 80%
    neither the finding nor the mark remains."""
    ds = _cache.load(SYNTH)
    report = dptrace.report(ds, thresholds={"negotiation_straggler": 80})
    assert not report.tables["horovod.stragglers"]["straggler"].any()
    assert "negotiation_straggler" not in set(
        report.tables["findings.findings"]["kind"].astype(str))
    report = dptrace.report(ds, thresholds={"negotiation_straggler": 75})
    assert report.tables["horovod.stragglers"]["straggler"].sum() == 1


def test_two_timelines_of_one_run_naming_two_ranks_mark_none():
    """One run never names two ranks: a run labelled over the 2019 timeline (rank 0) and the
    synthetic one (rank 3) marks neither, as its findings name neither."""
    ds = dptrace.load({"both": [RANK4, SYNTH]})
    t = horovod_section(ds, {}).tables["stragglers"]
    assert not t["straggler"].any()
    found = dptrace.findings(ds)
    assert "negotiation_straggler" not in set(found["kind"].astype(str))
    assert "unjudged_negotiations" in set(found["kind"].astype(str))
    plain, _ = _draw(ds)
    assert plain.count("no rank named (see the findings)") == 2


def test_start_up_only_table_keeps_its_columns_on_a_one_rank_file():
    """A timeline with one rank compares nothing: the table is empty, with every column."""
    ds = dptrace.load(FIX / "horovod" / "alcfws_timeline_gpu_n1.json")
    t = horovod_section(ds, {}).tables["stragglers"]
    assert t.empty and {"steady_compared", "steady_waited", "straggler"} <= set(t.columns)
    plain, _ = _draw(ds)
    assert "none from 2+ ranks, so no rank can be called late" in plain
