"""``dptrace compare`` and ``dptrace scaling`` (issue 16), on real runs.

Compare: tests/fixtures/straggler/ holds real 4-rank runs of dp_steps.c under IBM mpitrace
that differ in one setting (``delayed_r2``: rank 2 sleeps 15 ms more per step; ``balanced``:
no delay). The numbers expected are read here from the inputs' own text (the train.log's
``Total img/sec`` line, each profile's ``total communication time`` and its Allreduce size
table), not from dptrace's tables. Scaling: MLPerf v1.0 NVIDIA BERT on 1 and 8 DGX A100 nodes
(../shared/realdata/scaling), whose logs print ``training_sequences_per_second``.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.analysis import compare as cmp
from dptrace.analysis import scaling as scl
from dptrace.cli import main, run_arguments
from dptrace.errors import DptraceError
from dptrace.reports import model

HERE = Path(__file__).resolve().parent
STRAG = HERE / "fixtures" / "straggler"
SCALE = HERE.parent.parent / "shared" / "realdata" / "scaling"
BERT1 = SCALE / "mlperf1.0_nv_bert_pytorch_n1_8gpu.txt"
BERT8 = SCALE / "mlperf1.0_nv_bert_pytorch_n8_64gpu.txt"


def _total(run: str) -> float:
    text = (STRAG / run / "train.log").read_text()
    return float(re.search(r"Total img/sec on \d+ CPU\(s\): ([\d.]+)", text).group(1))


def _comm_per_rank(run: str) -> float:
    times = [float(re.search(r"total communication time = ([\d.]+)", p.read_text()).group(1))
             for p in sorted((STRAG / run).glob("mpi_profile.*"))]
    return sum(times) / len(times)


def _small_allreduce_per_rank(run: str) -> float:
    """The 8-byte MPI_Allreduce time of each profile's size table, mean over the ranks."""
    out = []
    for p in sorted((STRAG / run).glob("mpi_profile.*")):
        table = p.read_text().split("MPI_Allreduce             #calls")[1]
        out.append(next(float(t) for n, b, t in re.findall(
            r"^\s+(\d+)\s+([\d.]+)\s+([\d.]+)$", table, re.M) if float(b) == 8.0))
    return sum(out) / len(out)


@pytest.fixture(scope="module")
def pair():
    return dptrace.compare(dptrace.load(STRAG / "balanced"), dptrace.load(STRAG / "delayed_r2"))


def test_compare_job_throughput_matches_the_logs(pair):
    t = pair.tables["compare.compare"]
    job = t[t["table"] == "throughput.job"].iloc[0]
    assert job["base"] == _total("balanced") == 2317.0
    assert job["candidate"] == _total("delayed_r2") == 1506.8
    assert job["change_pct"] == pytest.approx((1506.8 - 2317.0) / 2317.0 * 100)


def test_compare_names_the_change_that_dominates(pair):
    """The delayed rank makes the others wait in the 8-byte loss Allreduce that opens each
    step: the first row of "what changed most" and the dominant-change finding say so."""
    top = pair.tables["compare.changes"]
    first = top.iloc[0]
    assert (first["table"], first["key"]) == ("message_sizes.bins", "MPI_Allreduce 4-8 B")
    base, cand = _small_allreduce_per_rank("balanced"), _small_allreduce_per_rank("delayed_r2")
    assert first["base"] == pytest.approx(base) and first["candidate"] == pytest.approx(cand)
    assert first["change_s"] == pytest.approx(cand - base)
    assert top["change_s"].abs().is_monotonic_decreasing and len(top) <= cmp.TOP
    f = pair.tables["findings.findings"]
    dom = f[f["kind"] == "dominant_change"].iloc[0]
    assert "MPI_Allreduce 4-8 B" in dom["message"] and dom["severity"] == "warning"
    assert "straggler" in dom["hint"]


def test_compare_findings_come_first_with_the_numbers(pair):
    assert pair.sections[0].name == "findings"
    f = pair.tables["findings.findings"]
    assert list(f["kind"].astype(str)) == ["throughput_change", "dominant_change",
                                          "comm_time_change"]
    assert "fell 35.0%" in f["message"].iloc[0] and "2,317 -> 1,507" in f["message"].iloc[0]
    comm = f[f["kind"] == "comm_time_change"].iloc[0]["message"]
    b, c = _comm_per_rank("balanced"), _comm_per_rank("delayed_r2")
    assert f"({b:.2f} s -> {c:.2f} s)" in comm and f"{c / b:.1f}x" in comm


def test_compare_rows_match_by_what_they_are_not_by_job_id(pair):
    """The two runs have different mpitrace job ids (5002, 5001): rows still pair up."""
    t = pair.tables["compare.compare"]
    ranks = t[(t["table"] == "communication.ranks") & (t["metric"] == "comm_time_s")]
    assert sorted(ranks["key"]) == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert ranks[["base", "candidate"]].notna().all().all()
    # the delayed rank waits least: its MPI time grew least
    assert ranks.sort_values("change").iloc[0]["key"] == "rank 2"


def test_compare_of_one_run_with_itself_changes_nothing():
    ds = dptrace.load(STRAG / "balanced")
    r = dptrace.compare(ds, ds, labels=("a", "b"))
    t = r.tables["compare.compare"]
    assert len(t) and (t["change"] == 0).all()
    assert r.tables["compare.changes"].empty
    f = r.tables["findings.findings"]
    assert set(f["severity"].astype(str)) <= {"info"}


def test_compare_threshold_override_turns_the_drop_into_info(pair):
    r = dptrace.compare(dptrace.load(STRAG / "balanced"), dptrace.load(STRAG / "delayed_r2"),
                        thresholds={"throughput_change": 50})
    f = r.tables["findings.findings"]
    assert f[f["kind"] == "throughput_change"]["severity"].astype(str).tolist() == ["info"]


def test_compare_needs_one_run_each():
    two = dptrace.load({"a": STRAG / "balanced", "b": STRAG / "balanced_2"})
    with pytest.raises(DptraceError, match="holds 2 runs"):
        dptrace.compare(two, dptrace.load(STRAG / "balanced_3"))


def test_compare_of_runs_without_a_shared_table_is_empty_not_an_error(tmp_path):
    ds_mpi = dptrace.load(sorted((STRAG / "balanced").glob("mpi_profile.*")))
    ds_log = dptrace.load(STRAG / "delayed_r2" / "train.log")
    r = dptrace.compare(ds_mpi, ds_log, labels=("mpi", "log"))
    assert r.tables["compare.compare"].empty
    assert r.tables["findings.findings"].empty


def test_compare_cli_json_html_and_fail_on(tmp_path, capsys):
    out, html = tmp_path / "c.json", tmp_path / "c.html"
    code = main(["compare", f"before={STRAG / 'balanced'}", f"after={STRAG / 'delayed_r2'}",
                 "--json", str(out), "--html", str(html), "--fail-on", "warning"])
    assert code == 4
    doc = json.loads(out.read_text())
    rows = doc["sections"]["compare"]["tables"]["compare"]
    assert rows[0]["table"] == "throughput.job" and rows[0]["base"] == 2317.0
    kinds = [f["kind"] for f in doc["sections"]["findings"]["tables"]["findings"]]
    assert kinds[0] == "throughput_change"
    text = capsys.readouterr().out
    assert "What changed most in time" in text and "MPI_Allreduce 4-8 B" in text
    page = html.read_text()
    assert "<h1>dptrace compare</h1>" in page and "fig-compare-largest_changes" in page


def test_compare_cli_one_run_per_argument(tmp_path, capsys):
    """The same directory twice is read once: one run, and a usage error that says so."""
    code = main(["compare", f"{STRAG / 'balanced'}", f"{STRAG / 'balanced'}"])
    assert code == 2
    assert "needs one run per argument; the inputs make 1 run(s)" in capsys.readouterr().err


def test_run_arguments_group_paths_into_labelled_runs(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("x\n")
    b.write_text("y\n")
    got = run_arguments([f"four={a},{b}", str(a)])
    assert [(x.path, x.label) for x in got] == [(str(a), "four"), (str(b), "four"),
                                               (str(a), "a.log")]


# ---- scaling -----------------------------------------------------------------------------------

def _printed(path: Path) -> float:
    m = re.search(r"'training_sequences_per_second': ([\d.]+)", path.read_text())
    return float(m.group(1))


@pytest.mark.skipif(not BERT8.exists(), reason="needs ../shared/realdata/scaling")
def test_scaling_on_mlperf_bert_1_and_8_nodes_matches_the_printed_figures():
    """The logs print the job's sequences/s (2,193.4 on 8 GPUs, 18,010.0 on 64) and, in their
    srun -l prefixed :::MLLOG lines, ranks 0-7 and 0-63 (the mllog format); the labels say
    the same (8=..., 64=...)."""
    ds = dptrace.load({"8": BERT1, "64": BERT8})
    r = dptrace.scaling(ds)
    sc = r.tables["scaling.scaling"]
    assert list(sc["workers"]) == [8, 64]
    assert list(sc["workers_from"]) == ["world size (MLPerf :::MLLOG lines of ranks 0-7)",
                                        "world size (MLPerf :::MLLOG lines of ranks 0-63)"]
    assert not sc["note"].fillna("").str.contains("label says").any()
    t1, t8 = _printed(BERT1), _printed(BERT8)
    assert sc["job_value"].tolist() == pytest.approx([t1, t8])
    assert sc["speedup"].iloc[1] == pytest.approx(t8 / t1)
    assert sc["efficiency"].iloc[1] == pytest.approx((t8 / t1) / (64 / 8))
    assert sc["efficiency"].iloc[1] == pytest.approx(1.026, abs=1e-3)
    assert (sc["mode"] == "weak").all() and sc["missing"].eq("").all()
    f = r.tables["findings.findings"]
    assert "scaling_efficiency" not in set(f["kind"].astype(str))   # 103%: scales


def test_scaling_efficiency_and_negative_scaling_findings():
    """Two 4-rank runs labelled as 2 and 4 workers (the data says 4 for both: the data
    wins, and the note says the label disagreed); the slower one labelled larger: negative
    scaling and low efficiency, naming the routine whose time grew."""
    ds = dptrace.load({"2": STRAG / "balanced", "4": STRAG / "delayed_r2"})
    sc = scl.scaling(dptrace.report(ds).tables, ds.runs)
    assert list(sc["workers"]) == [4, 4]
    assert "the label says 2" in sc["note"].iloc[0]
    r = dptrace.scaling(ds, by="ranks")
    assert r.tables["scaling.scaling"]["speedup"].iloc[1] == pytest.approx(1506.8 / 2317.0)


def test_scaling_findings_on_stated_workers():
    tables = dptrace.report(dptrace.load(
        {"a": STRAG / "balanced", "b": STRAG / "delayed_r2"})).tables
    runs = pd.DataFrame({"run": ["a", "b"], "label": ["1", "2"],
                         "world_size": [None, None], "nodes": [None, None],
                         "world_size_from": [None, None]})
    sc = scl.scaling(tables, runs)
    assert list(sc["workers"]) == [1, 2]
    assert sc["efficiency"].iloc[1] == pytest.approx(1506.8 / 2317.0 / 2)
    from dptrace.findings import runs as rules

    growth = cmp.wide(tables, "communication.routines", "time_s_per_rank", ["a", "b"])
    f = rules.scaling_findings(sc, growth)
    kinds = list(f["kind"].astype(str))
    assert kinds == ["negative_scaling", "scaling_efficiency"]
    eff = f.iloc[1]["message"]
    assert "Efficiency at 2 ranks is 33%" in eff and "MPI_Allreduce time per rank grew" in eff


def test_scaling_keeps_a_run_without_throughput_and_says_what_is_missing():
    ds = dptrace.load({"4": STRAG / "balanced",
                       "8": sorted((STRAG / "delayed_r2").glob("mpi_profile.*"))})
    sc = dptrace.scaling(ds).tables["scaling.scaling"]
    row = sc[sc["run"] == "8"].iloc[0]
    assert row["missing"] == "a throughput figure"
    assert row["comm_time_s"] == pytest.approx(_comm_per_rank("delayed_r2"), abs=1e-3)
    assert math.isnan(row["speedup"])


def test_scaling_of_mlperf_logs_needs_no_labels(tmp_path):
    """Dell's MLPerf v0.7 logs (mpirun without --tag-output) state their ranks in the
    training launch ('+ mpirun --allow-run-as-root --bind-to none -np 8 ...', line 33 of the
    2-node log): scaling needs no label (issue 29, 1.3)."""
    dell = [SCALE / f"mlperf0.7_dell_resnet_n{n}_{4 * n}gpu.txt" for n in (1, 2)]
    sc = dptrace.scaling(dptrace.load({"one": dell[0], "two": dell[1]})) \
        .tables["scaling.scaling"] if dell[1].exists() else None
    if sc is None:
        pytest.skip("needs ../shared/realdata/scaling")
    assert sc["workers"].tolist() == [4, 8]
    assert sc["workers_from"].str.contains("mpirun -np").all()
    # 5,597 and 11,243 samples/s: speedup 2.01 of an ideal 2
    assert sc["efficiency"].iloc[1] == pytest.approx(1.004, abs=0.01)


def test_scaling_never_divides_different_metrics():
    tables = {"throughput.job": pd.DataFrame({
        "run": ["a", "b"], "metric": ["samples_per_s", "tokens_per_s"], "value": [10.0, 500.0]})}
    runs = pd.DataFrame({"run": ["a", "b"], "label": ["1", "2"], "world_size": [None, None],
                         "nodes": [None, None], "world_size_from": [None, None]})
    sc = scl.scaling(tables, runs)
    assert sc["speedup"].tolist() == [1.0, 1.0]   # each its own base: never 500/10
    assert sc["base_run"].tolist() == ["a", "b"]


def test_scaling_cli(tmp_path, capsys):
    out = tmp_path / "s.json"
    code = main(["scaling", f"4={STRAG / 'balanced'}", f"4b={STRAG / 'balanced_2'}",
                 "--json", str(out), "--html", str(tmp_path / "s.html")])
    assert code == 0
    doc = json.loads(out.read_text())
    rows = doc["sections"]["scaling"]["tables"]["scaling"]
    assert [r["workers"] for r in rows] == [4, 4]
    assert "routines" in doc["sections"]["scaling"]["tables"]
    assert "Scaling" in capsys.readouterr().out


def test_the_views_do_not_leak_into_the_ordinary_report():
    r = dptrace.report(dptrace.load(STRAG / "balanced"))
    assert r.view == "report" and not {"compare", "scaling"} & {s.name for s in r.sections}
    with pytest.raises(ValueError, match="view"):
        model.build(dptrace.load(STRAG / "balanced"), "nope")


def test_compare_horovod_timelines_names_the_activity_that_grew():
    """Two real one-rank Horovod timelines (ALCF workshop: the CPU and the GPU build of the
    same script): the GPU run's broadcasts spend 455 ms in INIT_NCCL (its one interval in
    the timeline, 455,040 us), which the CPU run (MPI_BCAST) never has. The activity, not
    the op's whole interval that holds it, is the dominant change."""
    hv = HERE / "fixtures" / "horovod"
    r = dptrace.compare(dptrace.load(hv / "alcfws_timeline_cpu_n1.json"),
                        dptrace.load(hv / "alcfws_timeline_gpu_n1.json"), labels=("cpu", "gpu"))
    top = r.tables["compare.changes"]
    assert top.iloc[0]["key"] == "BROADCAST INIT_NCCL"
    assert top.iloc[0]["candidate"] == pytest.approx(0.455040)
    assert not top["key"].str.endswith("(whole op)").any()
    f = r.tables["findings.findings"]
    assert "BROADCAST INIT_NCCL" in f[f["kind"] == "dominant_change"]["message"].iloc[0]


# ---- the real weak-scaling set and bucket-size pair (tests/fixtures/scaling) -------------------

SCALING = HERE / "fixtures" / "scaling"
WEAK = {n: SCALING / "weak" / f"n{n}" for n in (1, 2, 4, 8)}


def _printed_total(run: Path) -> tuple[int, float]:
    """(N, img/s) of rank 0's 'Total img/sec on N CPU(s): X' line."""
    m = re.search(r"Total img/sec on (\d+) CPU\(s\): ([\d.]+)", (run / "train.log").read_text())
    return int(m.group(1)), float(m.group(2))


def _mean_comm(run: Path) -> float:
    t = [float(re.search(r"total communication time = ([\d.]+)", p.read_text()).group(1))
         for p in sorted(run.glob("mpi_profile.*"))]
    return sum(t) / len(t)


@pytest.fixture(scope="module")
def weak():
    return main_json(["scaling", *(str(p) for p in WEAK.values())])


def main_json(argv: list[str]) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        assert main([*argv, "--json", str(out)]) in (0, 1, 4)
        return json.loads(out.read_text())


def test_weak_scaling_matches_the_runs_printed_totals(weak):
    """Speedup and efficiency from the logs' own Total img/sec lines, by hand: n2 0.958, n4
    0.907, n8 0.784 (tests/fixtures/scaling/README.md); workers from the mpitrace world
    size; MPI time per rank from each profile's 'total communication time'."""
    rows = weak["sections"]["scaling"]["tables"]["scaling"]
    assert [r["label"] for r in rows] == ["n1", "n2", "n4", "n8"]
    n1, t1 = _printed_total(WEAK[1])
    for r, (n, path) in zip(rows, WEAK.items(), strict=True):
        printed_n, total = _printed_total(path)
        assert r["workers"] == printed_n == n
        assert r["workers_from"].startswith("world size (mpitrace")
        assert r["job_value"] == total
        assert r["speedup"] == pytest.approx(total / t1)
        assert r["efficiency"] == pytest.approx(total / (n / n1 * t1))
        assert r["comm_time_s"] == pytest.approx(_mean_comm(path), abs=1e-3)
        assert r["comm_from"] == "mpitrace" and r["missing"] == ""
    assert [round(r["efficiency"], 3) for r in rows] == [1.0, 0.958, 0.907, 0.784]


def test_weak_scaling_names_the_cost_that_grows(weak):
    sec = weak["sections"]["scaling"]["tables"]
    routines = {r["key"]: r for r in sec["routines"]}
    grows = [routines["MPI_Allreduce"][k] for k in ("n1", "n2", "n4", "n8")]
    assert grows == sorted(grows) and grows[-1] > 2.0
    bins = {r["key"]: r for r in sec["message_sizes"]}
    assert bins["MPI_Allreduce 512 KiB-1 MiB"]["n8"] == pytest.approx(1.856, abs=2e-3)
    f = weak["sections"]["findings"]["tables"]["findings"]
    eff = [x for x in f if x["kind"] == "scaling_efficiency"]
    assert len(eff) == 1 and eff[0]["subject"] == "8 ranks"
    assert eff[0]["message"].startswith("Efficiency at 8 ranks is 78%")
    assert "MPI_Allreduce time per rank grew from 0.00" in eff[0]["message"]
    assert not [x for x in f if x["kind"] == "negative_scaling"]


def test_compare_bucket_size_pair_names_the_dominant_change():
    """compare/base (3 x 1 MiB gradient buckets) vs compare/cand (3 x 8 MiB): the 4-8 MiB
    Allreduce bin is the change that dominates, first in 'changes' and in its finding
    (README: 7.586 s per rank, absent in base)."""
    doc = main_json(["compare", f"1MiB={SCALING / 'compare' / 'base'}",
                     f"8MiB={SCALING / 'compare' / 'cand'}"])
    tables = doc["sections"]["compare"]["tables"]
    first = tables["changes"][0]
    assert (first["table"], first["key"]) == ("message_sizes.bins", "MPI_Allreduce 4-8 MiB")
    assert first["base"] == 0 and first["candidate"] == pytest.approx(7.586, abs=2e-3)
    f = doc["sections"]["findings"]["tables"]["findings"]
    kinds = [x["kind"] for x in f]
    assert kinds[:2] == ["throughput_change", "dominant_change"]
    assert "fell 43.3%" in f[0]["message"]
    assert "MPI_Allreduce 4-8 MiB" in f[1]["message"] and "bandwidth" in f[1]["hint"]
    comm = next(x for x in f if x["kind"] == "comm_time_change")["message"]
    b, c = _mean_comm(SCALING / "compare" / "base"), _mean_comm(SCALING / "compare" / "cand")
    assert f"{c / b:.1f}x" in comm


def test_scaling_by_instances_and_strong_mode():
    """--by instances counts the ranks that print their own per-CPU figure (1, 2, 4, 8 in
    the weak set); --strong keeps the formula and says so in `mode`."""
    doc = main_json(["scaling", *(str(p) for p in WEAK.values()), "--by", "instances",
                     "--strong"])
    rows = doc["sections"]["scaling"]["tables"]["scaling"]
    assert [r["workers"] for r in rows] == [1, 2, 4, 8]
    assert {r["workers_from"] for r in rows} == {"throughput instances"}
    assert {r["mode"] for r in rows} == {"strong"}
    assert rows[-1]["efficiency"] == pytest.approx(5018.4 / (8 * 799.7))


def test_scaling_nodes_when_every_run_is_on_one_host():
    doc = main_json(["scaling", *(str(p) for p in WEAK.values()), "--by", "nodes"])
    rows = doc["sections"]["scaling"]["tables"]["scaling"]
    assert [r["workers"] for r in rows] == [1, 1, 1, 1]
    assert [r["ideal_speedup"] for r in rows] == [1, 1, 1, 1]


def test_a_run_argument_that_reads_nothing_is_named(tmp_path, capsys):
    assert main(["compare", str(STRAG / "balanced"), str(tmp_path / "nothing")]) == 2
    assert "nothing: no such file or directory" in " ".join(capsys.readouterr().err.split())
    doc = main_json(["scaling", str(STRAG / "balanced"), f"8={tmp_path / 'nothing'}"])
    rows = doc["sections"]["scaling"]["tables"]["scaling"]
    lost = [r for r in rows if r["run"] == "8"]
    assert lost and lost[0]["workers"] == 8 and lost[0]["missing"].startswith("any input")
    f = doc["sections"]["findings"]["tables"]["findings"]
    assert [x["severity"] for x in f if x["subject"] == "8"] == ["warning"]
    assert doc["exit_code"] == 1


def test_small_allreduces_of_next_to_no_time_are_no_finding():
    """weak/n1: one rank, 0.001 s of MPI time, all of it in 8-byte Allreduces (local copies):
    '100% of the MPI time' of nothing is not a warning; Theta's 21 s per rank still is."""
    f = dptrace.findings(dptrace.load(WEAK[1]))
    assert "small_message_allreduce" not in set(f["kind"].astype(str))
    theta = HERE / "fixtures" / "mpitrace" / "alcfws_theta_knl32"
    assert "small_message_allreduce" in set(dptrace.findings(dptrace.load(theta))["kind"]
                                             .astype(str))
