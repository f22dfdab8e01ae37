"""MLPerf :::MLLOG lines (dptrace.formats.mllog) on real MLPerf training results, checked
against the files' own text (tests/fixtures/mllog, PROVENANCE.tsv there; the other scales in
../shared/realdata/scaling), what the section derives (dptrace.formats.mllog.compute), the runs
table, and damaged copies: problems naming file and line, never other numbers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import dptrace
from dptrace.formats.mllog import compute as ml
from dptrace.formats.mllog import read, sniff
from dptrace.registry import detect_all
from dptrace.sources import Source

HERE = Path(__file__).parent
BERT1 = HERE / "fixtures" / "mllog" / "mlperf1.0_nv_bert_pytorch_n1_8gpu.txt"
SCALE = HERE.parent.parent / "shared" / "realdata" / "scaling"
DELL = {n: SCALE / f"mlperf0.7_dell_resnet_n{n}_{4 * n}gpu.txt" for n in (1, 2, 4)}
NV_RESNET1 = SCALE / "mlperf1.0_nv_resnet_mxnet_n1_8gpu.txt"
needs_real = pytest.mark.skipif(not DELL[4].is_file(), reason="needs ../shared/realdata/scaling")


def _records(path: Path) -> list[dict]:
    """Every record of the file, by an independent reading: the JSON after the marker."""
    out = []
    for line in path.read_text().splitlines():
        if ":::MLLOG" in line:
            out.append(json.loads(line.split(":::MLLOG", 1)[1]))
    return out


def _time(path: Path, key: str) -> int:
    return next(r["time_ms"] for r in _records(path) if r["key"] == key)


def test_bert_one_node_records_and_summary():
    ds = dptrace.load(BERT1)
    assert ds.sources["format"].item() == "trainlog+mllog"
    ev = ds["mllog"]
    launch = ev["key"].astype(str).str.startswith("launcher_")
    assert (~launch).sum() == len(_records(BERT1)) == 58
    # the launcher's lines: '+ srun --ntasks=1 ...' (lines 4, 9), '+ srun -l --mpi=none
    # --ntasks=8 --ntasks-per-node=8 ...' (line 14)
    assert ev.loc[launch, ["lineno", "value"]].values.tolist() == [
        [4, "srun --ntasks=1"], [9, "srun --ntasks=1"], [14, "srun --ntasks=8"],
        [14, "srun --ntasks-per-node=8"]]
    # '0: :::MLLOG {... "time_ms": 1621399900691, ... "key": "global_batch_size", "value": 448'
    gbs = ev[ev["key"] == "global_batch_size"].iloc[0]
    assert (gbs["instance"], gbs["rank"], gbs["time_us"], gbs["value_num"]) == \
        ("0", 0, 1621399900691000.0, 448.0)
    s = ml.summary(ev).iloc[0]
    assert s["benchmark"] == "bert" and s["platform"] == "1xNVIDIA DGX A100"
    assert (s["nodes"], s["ranks"], s["global_batch_size"]) == (1, 8, 448)
    assert s["run_start_us"] == 1621399928015 * 1000
    # exactly the figure from the printed ms: the microseconds change no digit of it
    assert s["time_to_train_s"] == (1621401361899 - 1621399928015) / 1000 == 1433.884
    assert s["status"] == "success" and s["epochs"] == 1
    assert s["train_samples"] == 3000256
    # 20 evaluations inside its one epoch: no epoch rule, and no throughput printed
    assert pd_isna(s["throughput_samples_per_s"])
    assert s["throughput_from"].startswith("none: evaluations inside epochs")
    runs = ds.runs.iloc[0]
    assert (runs["world_size"], runs["nodes"]) == (8, 1)
    # the training log's own figure is still read beside it
    tp = ds["throughput"]
    assert tp["name"].astype(str).tolist() == ["training_sequences_per_second"]


def test_time_us_is_each_records_time_ms_times_1000():
    """Every record's 'time_ms' (read here with json) x 1000 is its time_us, exactly: whole
    microseconds since the epoch are integers below 2^53 for current dates, held exactly by
    a float64 (1621399900691 ms = 1621399900691000 us, under 9007199254740992)."""
    ev = dptrace.load(BERT1)["mllog"]
    ev = ev[~ev["key"].astype(str).str.startswith("launcher_")]
    printed = [r["time_ms"] for r in _records(BERT1)]
    assert len(printed) == len(ev) == 58
    assert all(isinstance(t, int) and t * 1000 < 2 ** 53 for t in printed)
    got = ev.sort_values("lineno", kind="stable")["time_us"].tolist()
    assert [int(t) for t in got] == [t * 1000 for t in printed]
    assert got == [float(t * 1000) for t in printed]


def test_fractional_time_ms_scales_exactly(tmp_path):
    """A time_ms with decimals is x 1000 on its printed decimal (1.0135 ms -> 1013.5 us, where
    1.0135 * 1000 is 1013.5000000000001), and one whose microseconds overflow a float is
    missing, with an error naming its line."""
    path = tmp_path / "frac.txt"
    path.write_text(':::MLLOG {"time_ms": 1.0135, "key": "run_start", "value": null}\n'
                    ':::MLLOG {"time_ms": 1e307, "key": "run_stop", "value": null}\n')
    ds = dptrace.load(path)
    t = ds["mllog"]["time_us"].tolist()
    assert t[0] == 1013.5 and pd_isna(t[1])
    p = ds.problems[ds.problems["message"].str.contains("time_ms")]
    assert p["line"].tolist() == [2] and "x 10^3 does not fit" in p["message"].item()


def pd_isna(v: object) -> bool:
    import pandas as pd
    return bool(pd.isna(v))


@needs_real
def test_dell_resnet_three_scales_by_hand():
    for n, path in DELL.items():
        ds = dptrace.load(path)
        recs = _records(path)
        ev = ds["mllog"]
        assert (~ev["key"].astype(str).str.startswith("launcher_")).sum() == len(recs)
        s = ml.summary(ds["mllog"]).iloc[0]
        assert s["nodes"] == n and ds.runs["nodes"].item() == n
        assert s["time_to_train_s"] == pytest.approx(
            (_time(path, "run_stop") - _time(path, "run_start")) / 1000)
        # epochs: an independent pairing of the first start and stop of each epoch_num
        start: dict[int, int] = {}
        stop: dict[int, int] = {}
        for r in recs:
            e = r["metadata"].get("epoch_num")
            if r["key"] == "epoch_start":
                start.setdefault(e, r["time_ms"])
            elif r["key"] == "epoch_stop":
                stop.setdefault(e, r["time_ms"])
        assert s["epochs"] == len(stop)
        total_s = sum(stop[e] - start[e] for e in stop) / 1000
        samples = next(r["value"] for r in recs if r["key"] == "train_samples")
        assert samples == 1281167
        assert s["throughput_samples_per_s"] == pytest.approx(samples * len(stop) / total_s)
        assert s["throughput_from"].startswith(f"epochs: train_samples x {len(stop)} ")
    # by hand for one node: run_start 1593141109250, run_stop 1593150340361; 40 epochs
    one = ml.summary(dptrace.load(DELL[1])["mllog"]).iloc[0]
    assert one["time_to_train_s"] == pytest.approx(9231.111)
    assert one["epochs"] == 40
    assert one["throughput_samples_per_s"] == pytest.approx(5593.7, abs=0.1)


@needs_real
def test_dell_resnet_scaling_by_nodes():
    ds = dptrace.load({f"n{n}": p for n, p in DELL.items()})
    sc = dptrace.scaling(ds, by="nodes").tables["scaling.scaling"]
    assert list(sc["workers"]) == [1, 2, 4]
    assert sc["missing"].eq("").all()
    assert sc["ideal_speedup"].tolist() == [1.0, 2.0, 4.0]


@needs_real
def test_printed_throughput_is_their_mean():
    ev = dptrace.load(NV_RESNET1)["mllog"]
    printed = [r["value"] for r in _records(NV_RESNET1) if r["key"] == "throughput"]
    assert len(printed) == 35
    s = ml.summary(ev).iloc[0]
    assert s["throughput_samples_per_s"] == pytest.approx(sum(printed) / len(printed))
    assert s["throughput_from"] == "printed: mean of 35 'throughput' values"
    assert s["nodes"] == 1 and s["epochs"] == 35


def test_prefixes():
    assert read.prefix("0: ") == ("0", 0)
    assert read.prefix(" 12: ") == ("12", 12)
    assert read.prefix("[1,3]<stdout>:") == ("1,3", 3)
    assert read.prefix("") == (None, None)
    assert read.prefix(" Average Recall (AR) = 0.379") == (None, None)


def test_nodes_and_ranks_rules():
    import pandas as pd
    assert ml.nodes_of("128xNVIDIA DGX A100") == 128
    assert ml.nodes_of("SUBMISSION_PLATFORM_PLACEHOLDER") is None
    assert ml.ranks_of(pd.Series([0, 1, 2, 3, 1], dtype="Int64")) == 4
    assert ml.ranks_of(pd.Series([0, 2], dtype="Int64")) is None   # a gap: not all ranks
    assert ml.ranks_of(pd.Series([0], dtype="Int64")) is None


REC = ('{"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": "%s", '
       '"value": %s, "metadata": {"file": "x.py", "lineno": 1}}')


def test_torn_glued_and_cut_records(tmp_path):
    lines = [
        "starting\n",
        ":::MLLOG " + REC % (1000, "seed", "7") + "\n",
        ":::MLLOG " + (REC % (1001, "global_batch_size", "256"))[:40] + "\n",   # torn (line 3)
        "mAP = 0.379:::MLLOG " + REC % (1002, "eval_accuracy", "0.379") + "\n",  # glued
        "1: :::MLLOG " + REC % (1003, "a", "1") + ":::MLLOG " + REC % (1004, "b", '"x"')
        + "\n",                                                              # two in a line
        ":::MLLOG " + (REC % (1005, "train_samples", "100"))[:-5],            # cut (line 6)
    ]
    path = tmp_path / "log.txt"
    path.write_text("".join(lines))
    assert sniff(Source(str(path), path), path.read_bytes()) == 0.55
    ds = dptrace.load(path)
    ev = ds["mllog"]
    assert ev["key"].astype(str).tolist() == ["seed", "eval_accuracy", "a", "b"]
    assert ev["lineno"].tolist() == [2, 4, 5, 5]
    assert ev["value_num"].tolist()[:3] == [7.0, 0.379, 1.0]
    assert pd_isna(ev["instance"].iloc[1]) and ev["instance"].iloc[2] == "1"
    assert ev["rank"].iloc[2] == 1 and pd_isna(ev["rank"].iloc[3])   # the prefix is the first
    mine = ds.problems[ds.problems["message"].str.contains("MLLOG")]
    assert mine["line"].tolist() == [3, 6]
    assert mine["message"].str.contains("torn or cut").all()
    assert mine["source"].str.endswith("log.txt").all()
    # the training-log format runs too (it claims any text)
    assert [p.name for p in detect_all(Source(str(path), path))] == ["mllog", "trainlog"]


def test_bad_time_is_missing_with_a_problem(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text(':::MLLOG {"time_ms": "soon", "key": "run_start", "value": null}\n')
    ds = dptrace.load(path)
    assert ds["mllog"]["time_us"].isna().all() and len(ds["mllog"]) == 1
    p = ds.problems[ds.problems["message"].str.contains("time_ms")]
    assert p["line"].tolist() == [1]


def test_no_record_is_guessed(tmp_path):
    """A line mentioning the marker without a JSON object: not claimed, not read."""
    path = tmp_path / "n.txt"
    path.write_text("grep ':::MLLOG' result.txt\n")
    assert sniff(Source(str(path), path), path.read_bytes()) == 0.0
    assert re.search(":::MLLOG", path.read_text())


@needs_real
def test_report_section_terminal_and_figure():
    from rich.console import Console

    from dptrace.formats.mllog.terminal import draw_mllog

    rep = dptrace.report(dptrace.load(DELL[1]))
    sec = rep.section("mllog")
    row = sec.tables["runs"].iloc[0]
    assert (row["benchmark"], row["nodes"], row["epochs"]) == ("resnet", 1, 40)
    eps = sec.tables["epochs"]
    assert len(eps) == 40
    # epoch 1: epoch_start 1593141112417, epoch_stop 1593141341227 (lines 63 and 142)
    assert eps.iloc[0]["duration_s"] == pytest.approx((1593141341227 - 1593141112417) / 1000)
    # epoch 4's evaluation: 'eval_accuracy' 0.39664
    assert eps.set_index("epoch_num").loc[4, "eval_accuracy"] == 0.39664
    fig = sec.figures["log1_epochs"]
    assert [tr.name for tr in fig.data] == ["epoch time (s)", "eval accuracy"]
    assert len(fig.data[1].y) == 10            # 10 evaluations (grep -c eval_accuracy)
    console = Console(width=200, color_system=None, record=True)
    console.print(draw_mllog(sec))
    text = console.export_text()
    assert "5,593.7" in text and "success" in text and "9,231.11 s" in text
