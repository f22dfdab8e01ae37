"""DeepSpeed comms logger summaries (dptrace.formats.dscomms) on real files, checked against
the files' own text (tests/fixtures/dscomms, PROVENANCE.tsv there; the Polaris training log in
../shared/realdata/trainlog), beside a training log, and on damaged copies: problems naming
file and line, never other numbers."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.formats.dscomms import sniff
from dptrace.registry import detect_all
from dptrace.sources import Source

HERE = Path(__file__).parent
DOCS = HERE / "fixtures" / "dscomms" / "deepspeed_comms_logging_tutorial_from_docs.md"
REAL = HERE.parent.parent / "shared" / "realdata"
POLARIS = REAL / "trainlog" / "mlprof_deepspeed_comms_logger_polaris.log"
needs_real = pytest.mark.skipif(not POLARIS.is_file(), reason="shared/realdata is not beside "
                                "the clone")
#: a printed row: indented, a size with its unit (or 0B), then five numbers
ROW = re.compile(r"^\s+(?:0B|[\d.]+ [KMGTPEZY]?B)(?:\s+[\d.]+){5}\s*$")
HEADER = ("Comm. Op            Message Size        Count               Total Latency(ms)   "
          "Avg Latency(ms)     tput_avg (Gbps)     busbw_avg (Gbps)    \n")
DS_LINE = ("[2023-04-14 08:27:19,411] [INFO] [timer.py:199:stop] epoch=0/micro_step={s}/"
           "global_step={s}, RunningAvgSamplesPerSec=173.4455644119137, "
           "CurrSamplesPerSec=171.97903593624417, MemAllocated=3.96GB, "
           "MaxMemAllocated=11.65GB\n")
SUMMARY = (HEADER + "all_reduce\n"
           "                    4.0 MB              20                  100.00              "
           "5.00                6.71                11.74               \n"
           "                    1.0 GB              2                   300.00              "
           "150.00              57.27               100.22              \n")


def _count_rows(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if ROW.match(line))


def test_docs_page_values():
    ds = dptrace.load(DOCS)
    assert ds.sources["format"].item() == "dscomms"
    t = ds["ds_comms"]
    assert len(t) == _count_rows(DOCS) == 6
    assert t["block"].tolist() == [0, 0, 0, 1, 1, 1]
    # 'reduce_scatter_tensor | [Caller Func: reduce_scatter_fn]' then
    # '678.86 MB  80  1527.17  13.94  1211.75  1136.01' (line 30)
    r = t[t["lineno"] == 30].iloc[0]
    assert (r["op"], r["caller"], r["count"]) == ("reduce_scatter_tensor",
                                                  "reduce_scatter_fn", 80)
    assert r["size_bytes"] == round(678.86 * 1024 ** 2)
    assert (r["total_latency_s"], r["avg_latency_us"], r["tput_gbps"], r["busbw_gbps"]) == \
        (1.52717, 13940.0, 1211.75, 1136.01)          # 1527.17 ms / 1000, 13.94 ms x 1000
    # the first summary has no caller; '2.0 KB  146  11.12  0.08  0.43  0.41' (line 16)
    first = t[t["lineno"] == 16].iloc[0]
    assert (first["op"], first["size_bytes"], first["count"]) == ("broadcast", 2048, 146)
    assert pd.isna(first["caller"])
    assert ds.problems.empty


def test_latencies_are_the_printed_ms_in_the_data_models_units():
    """Every printed row of the docs page (read here with a regex): 'Total Latency(ms)' / 1000
    is total_latency_s (a total over the calls), 'Avg Latency(ms)' x 1000 is avg_latency_us
    (one call), each the float nearest the printed decimal scaled."""
    t = dptrace.load(DOCS)["ds_comms"].set_index("lineno")
    printed = {n: line.split()[-5:] for n, line in
               enumerate(DOCS.read_text().splitlines(), 1) if ROW.match(line)}
    assert sorted(printed) == sorted(t.index) and len(printed) == 6
    for n, (_, total, avg, _, _) in printed.items():
        assert t.loc[n, "total_latency_s"] == float(Decimal(total) / 1000), n
        assert t.loc[n, "avg_latency_us"] == float(Decimal(avg) * 1000), n


@needs_real
def test_polaris_log_beside_trainlog():
    ds = dptrace.load(POLARIS)
    assert ds.sources["format"].item() == "trainlog+dscomms"
    t = ds["ds_comms"]
    assert len(t) == _count_rows(POLARIS) == 9
    assert t["op"].tolist() == ["broadcast"] * 8 + ["log_summary_barrier"]
    assert t["size_bytes"].tolist() == [40, 64, 128, 256, 640, 1147, 72 * 1024, 576 * 1024, 0]
    assert t["total_latency_s"].sum() == pytest.approx(
        (0.07 + 0.07 + 0.08 + 0.07 + 0.06 + 1054.13 + 0.07 + 0.10 + 1104.30) / 1000)
    # '576.0 KB  1  0.10  0.10  49.02  49.02' is line 470
    r = t[t["lineno"] == 470].iloc[0]
    assert (r["size_bytes"], r["busbw_gbps"]) == (589824, 49.02)
    # the training log's own figures are still read
    assert len(ds["train_metrics"]) > 0


def test_runs_beside_a_training_log(tmp_path):
    log = tmp_path / "ds_train.log"
    log.write_text("".join(DS_LINE.format(s=s) for s in (10, 20, 30)) + SUMMARY)
    head = log.read_bytes()
    names = [p.name for p in detect_all(Source(str(log), log), head)]
    assert names == ["trainlog", "dscomms"]
    ds = dptrace.load(log)
    tp = ds["throughput"]
    assert len(tp[tp["name"] == "CurrSamplesPerSec"]) == 3
    t = ds["ds_comms"]
    assert t["size_bytes"].tolist() == [4 * 1024 ** 2, 1024 ** 3]
    assert t["count"].tolist() == [20, 2]
    # alone, the summary is its format's; the training log, which claims any text, still
    # runs beside it (it finds nothing here)
    alone = tmp_path / "summary.txt"
    alone.write_text(SUMMARY)
    assert [p.name for p in detect_all(Source(str(alone), alone))] == ["dscomms", "trainlog"]
    ds = dptrace.load(alone)
    assert ds.sources["format"].item() == "dscomms" and ds.problems.empty


def test_sniff_scores_between_companion_and_trainlog():
    src = Source(str(DOCS), DOCS)
    assert 0.5 <= sniff(src, DOCS.read_bytes()) < 0.6
    assert sniff(src, b"Comm. Op is a phrase in some text\n") == 0.0
    config = b'{\n  "comms_logger": {\n    "enabled": true,\n    "verbose": false\n  }\n}\n'
    assert sniff(src, config) == 0.55


def test_launcher_prefixes(tmp_path):
    log = tmp_path / "srun.out"
    log.write_text("".join(f"0: {line}\n" for line in SUMMARY.splitlines()))
    t = dptrace.load(log)["ds_comms"]
    assert t["busbw_gbps"].tolist() == [11.74, 100.22]


def test_torn_and_cut_rows(tmp_path):
    lines = SUMMARY.splitlines(keepends=True)
    torn = tmp_path / "torn.log"
    # the 4.0 MB row loses its last field (line 3): skipped, named; the next row is read
    torn.write_text("".join(lines[:2]) + lines[2].rsplit(None, 1)[0] + "\n" + lines[3])
    ds = dptrace.load(torn)
    assert ds["ds_comms"]["size_bytes"].tolist() == [1024 ** 3]
    p = ds.problems
    assert p["line"].tolist() == [3]
    assert "torn or cut" in p["message"].item() and p["source"].item().endswith("torn.log")
    cut = tmp_path / "cut.log"
    cut.write_text(SUMMARY.rstrip("\n")[:-30])     # the last row cut, no final newline
    ds = dptrace.load(cut)
    assert ds["ds_comms"]["size_bytes"].tolist() == [4 * 1024 ** 2]
    mine = ds.problems[ds.problems["message"].str.contains("comms")]   # the training log
    assert mine["line"].tolist() == [4]                              # warns of it too
    assert "cut" in mine["message"].item()


def test_row_without_op_and_header_without_rows(tmp_path):
    log = tmp_path / "odd.log"
    log.write_text(HEADER + SUMMARY.splitlines(keepends=True)[2] + "other text\n" + HEADER)
    ds = dptrace.load(log, format="dscomms")
    assert ds["ds_comms"].empty
    msgs = dict(zip(ds.problems["line"], ds.problems["message"], strict=True))
    assert "before any op" in msgs[2]
    assert "no row" in msgs[1] and "no row" in msgs[4]


def test_report_section_terminal_and_figure():
    from rich.console import Console

    from dptrace.formats.dscomms.terminal import draw_ds_comms

    rep = dptrace.report(dptrace.load(DOCS))
    sec = rep.section("ds_comms")
    ops = sec.tables["ops"]
    assert ops["block"].tolist() == [0, 0, 1, 1]
    assert ops["op"].tolist() == ["broadcast", "reduce_scatter_tensor"] * 2
    assert ops["caller"].isna().tolist() == [True, True, False, False]
    assert ops["caller"].tolist()[2:] == ["_broadcast_model", "reduce_scatter_fn"]
    first = ops.iloc[0]
    # broadcast, first summary: 146 + 1 calls, 11.12 + 8317.12 ms of 11.12 + 8317.12 + 602.29
    assert (first["sizes"], first["calls"]) == (2, 147)
    assert first["total_latency_s"] == pytest.approx((11.12 + 8317.12) / 1000)
    assert first["latency_share"] == pytest.approx((11.12 + 8317.12)
                                                   / (11.12 + 8317.12 + 602.29))
    assert (first["peak_busbw_gbps"], first["peak_size_bytes"]) == (0.41, 2048)
    fig = sec.figures["summary1_busbw"]
    assert fig.layout.xaxis.type == "log"
    assert [tr.name for tr in fig.data] == ["broadcast", "reduce_scatter_tensor"]
    assert list(fig.data[1].y) == [1376.31]
    console = Console(width=160, color_system=None, record=True)
    console.print(draw_ds_comms(sec))
    text = console.export_text()
    assert "reduce_scatter_fn" in text and "1,376.31" in text
    assert "total ms" in text and "8,328.24" in text     # 11.12 + 8317.12 ms, shown in ms
    hover = list(fig.data[0].customdata[:, 1])           # avg latency, ms as printed
    assert hover == [0.08, 8317.12]
