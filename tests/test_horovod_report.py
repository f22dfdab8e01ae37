"""The Horovod report section: terminal (pinned width) and JSON, called directly.

Numbers in the expected text are the hand-checked values of test_horovod_analysis.py.
"""

import json
from pathlib import Path

from rich.console import Console

import dptrace
from dptrace.formats.horovod.sections import build as horovod_section
from dptrace.formats.horovod.terminal import draw_horovod, short_name
from dptrace.reports import json_report
from dptrace.reports.fmt import human_time
from dptrace.reports.model import Report

FIX = Path(__file__).parent / "fixtures" / "horovod"


def render(*names: str) -> str:
    ds = dptrace.load([FIX / n for n in names])
    section = horovod_section(ds, {})
    assert section is not None
    console = Console(width=120, color_system=None, record=True)
    console.print(draw_horovod(section))
    out = console.export_text()
    assert max(len(line) for line in out.splitlines()) <= 120
    return out


def test_no_section_without_a_timeline():
    ds = dptrace.load(FIX.parent / "trainlog")
    assert horovod_section(ds, {}) is None


def test_four_rank_timeline_in_the_terminal():
    out = render("andrewor14_horovod_timeline_2019_4rank.json")
    # negotiation share: 143,113,586 of 189,808,515 us
    assert "negotiating 143.11 s of 189.81 s (75.4%)" in out
    assert "an op in flight 47.72 s (25.1%)" in out
    assert "no op in flight 136.15 s (71.7%) in 565 gaps between ops, longest 1.00 s" in out
    assert "673 of 673 negotiations have rank-ready ticks" in out
    rank0 = next(line for line in out.splitlines() if line.lstrip("│ ").startswith("0 "))
    assert "673" in rank0 and "100.0%" in rank0 and "634.6 ms" in rank0 and "3.10 s" in rank0
    assert "ALLREDUCE: 553 ops carried 660 tensors (1.19 per op, max 2); 107 fused 2+" in out
    assert "tensors per op: 1: 446 (80.7%) · 2: 107 (19.3%)" in out
    assert "13,999 CYCLE_START" in out
    b24 = next(line for line in out.splitlines() if "8-16 MiB" in line)
    assert "110" in b24 and "9.14 s" in b24 and "197 MB/s" in b24
    assert "per-line · 21,627 events · 19 tensors · 4 ranks seen · span 189.81 s" in out
    # activities grouped under their op, nested ones indented
    assert "│   MEMCPY_IN_FUSION_BUFFER" in out


def test_single_rank_and_warnings():
    out = render("alcfws_timeline_gpu_n1.json", "synthetic_killed_open_b.json",
                 "synthetic_cut_mid_record.json")
    assert "none from 2+ ranks, so no rank can be called late" in out
    assert out.count("╭─") == 3                       # one panel per file
    # the timeline warnings are findings now (one model, shown first in every face)
    from dptrace.findings import build

    ds = dptrace.load([FIX / n for n in ("synthetic_killed_open_b.json",
                                         "synthetic_cut_mid_record.json")])
    said = " ".join(build(ds)["message"])
    assert "3 intervals of" in said and "never closed (B without E)" in said
    assert "ends inside a record" in said
    assert "never closed" not in out                   # not said twice


def test_cached_negotiations_are_counted_not_hidden():
    out = render("synthetic_v0201_packed.json")
    ds = dptrace.load(FIX / "synthetic_v0201_packed.json")
    run = ds["hvd_runs"].iloc[0]
    expect = f"{run['negotiations_with_ticks']:,} of {run['negotiations']:,} negotiations"
    assert expect in out and "response cache" in out


def test_tensor_names_are_not_markup():
    out = render("synthetic_xss_tensor_name.json")
    assert "<img src=x onerror=alert(1)>" in out


def test_near_empty_file_says_little():
    out = render("smdebug_rotated_horovod_timeline_tiny.json")
    assert "1 CYCLE_START (no cycle time)" in out
    assert "negotiating" not in out


def test_json_carries_the_same_tables():
    ds = dptrace.load(FIX / "andrewor14_horovod_timeline_2019_4rank.json")
    section = horovod_section(ds, {})
    doc = json.loads(json.dumps(json_report.to_dict(Report(ds, [section]), 0)))
    sec = doc["sections"]["horovod"]
    assert set(sec["tables"]) == {"runs", "time", "activities", "stragglers", "fusion",
                                  "fusion_sizes", "small_allreduces", "throughput", "cycles",
                                  "idle_gaps", "top_tensors"}
    time = sec["tables"]["time"][0]
    assert (time["negotiate_wall_us"], time["span_us"]) == (143113586.0, 189808515.0)
    rank0 = sec["tables"]["stragglers"][0]
    assert (rank0["rank"], rank0["last"], rank0["max_lag_us"]) == (0, 673, 3104900.0)
    assert sec["tables"]["runs"][0]["start_epoch_us"] is None


def test_formatting_helpers():
    assert [human_time(x) for x in (3, 12_345, 143_113_586)] == ["3 µs", "12.3 ms", "143.11 s"]
    assert short_name("x" * 10) == "x" * 10
    assert short_name("a" * 50 + "_tail", 20) == "…" + ("a" * 50 + "_tail")[-19:]
