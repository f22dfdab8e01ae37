"""MLPerf logs' world size and job figure (issue 29 item 1.3, issue 30): what the runs table
and the job figure read from an MLPerf log, checked against each file's own lines
(../shared/realdata/scaling, PROVENANCE.tsv there), and numbers too large for int64 never
crash a load."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dptrace
from dptrace.analysis import scaling
from dptrace.formats.mllog import compute as ml
from dptrace.formats.mllog import read
from dptrace.formats.trainlog import job

HERE = Path(__file__).parent
BERT1 = HERE / "fixtures" / "mllog" / "mlperf1.0_nv_bert_pytorch_n1_8gpu.txt"
SCALE = HERE.parent.parent / "shared" / "realdata" / "scaling"
needs_real = pytest.mark.skipif(not (SCALE / "mlperf0.7_dell_resnet_n4_16gpu.txt").is_file(),
                                reason="needs ../shared/realdata/scaling")


def _line(path: Path, lineno: int) -> str:
    return path.read_text().splitlines()[lineno - 1]


def _records(path: Path) -> list[dict]:
    return [json.loads(line.split(":::MLLOG", 1)[1])
            for line in path.read_text().splitlines() if ":::MLLOG" in line]


def _figures(ds: dptrace.Dataset):
    tp, m = ds["throughput"], ds["train_metrics"]
    return job.job_figures(tp, ds.runs, 0.1, job.printed_ranges(m), m, mllog=ds["mllog"])


# ---- the rules on their own ----------------------------------------------------------------

def test_platform_nodes_and_accelerators_per_node():
    assert ml.nodes_of("8xXE8545x4A100-SXM-40GB") == 8
    assert ml.per_node_of("8xXE8545x4A100-SXM-40GB")[0] == 4
    assert ml.per_node_of("2xDSS8440x8V100-PCIE")[0] == 8
    assert (ml.nodes_of("8xNVIDIA DGX A100"), ml.per_node_of("8xNVIDIA DGX A100")[0]) == (8, 8)
    # a platform that names no count of accelerators: nodes only
    assert ml.nodes_of("4xSUBMISSION_PLATFORM_PLACEHOLDER") == 4
    assert ml.per_node_of("4xSUBMISSION_PLATFORM_PLACEHOLDER") == (None, "")
    assert ml.per_node_of("1xMI325X") == (None, "")
    assert ml.nodes_of("MI355X") is None
    # issue 30: beyond int64, or beyond Python's int() digit limit: no value, no exception
    assert ml.nodes_of("20000000000000000000xNVIDIA DGX A100") is None
    assert ml.nodes_of("9223372036854775808xNVIDIA DGX A100") is None
    assert ml.nodes_of("9223372036854775807xNVIDIA DGX A100") == 2 ** 63 - 1
    assert ml.nodes_of("5" * 5000 + "xNVIDIA DGX A100") is None
    assert ml.world_of(_frame([("submission_platform", "5" * 5000 + "xNVIDIA DGX A100")])) \
        == (None, None, None)
    assert ml.whole("7" * 5000) is None and ml.whole("0") is None and ml.whole("64.0") == 64


def test_launch_options_stop_at_the_program():
    assert read.launch_options("srun -l --mpi=none --ntasks=64 --ntasks-per-node=8 "
                               "--container-name=x ./run_and_time.sh -n 5") == [
        ("launcher_ranks", "srun --ntasks=64", 64),
        ("launcher_ranks_per_node", "srun --ntasks-per-node=8", 8)]
    assert read.launch_options("mpirun --allow-run-as-root --bind-to none -np 16 "
                               "singularity exec img python train.py -n 3") == [
        ("launcher_ranks", "mpirun -np 16", 16)]
    assert read.launch_options("srun -N1 -n1 --container-name=c python -c 'x'") == [
        ("launcher_nodes", "srun -N1", 1), ("launcher_ranks", "srun -n1", 1)]
    # Open MPI's -N is processes per node; srun's is nodes
    assert read.launch_options("mpirun -N 4 -n 16 ./a.out") == [
        ("launcher_ranks_per_node", "mpirun -N 4", 4), ("launcher_ranks", "mpirun -n 16", 16)]
    assert read.launch_options("srun --ntasks=" + "9" * 40 + " ./a") == []


def _log(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _rec(key: str, value: object, t: int = 1_600_000_000_000, **meta: object) -> str:
    return ":::MLLOG " + json.dumps({"namespace": "", "time_ms": t,
                                     "event_type": "POINT_IN_TIME", "key": key,
                                     "value": value, "metadata": {"file": "x.py", **meta}})


@pytest.mark.parametrize("platform", ["20000000000000000000xNVIDIA DGX A100",
                                      "5" * 5000 + "xNVIDIA DGX A100"])
def test_huge_platform_and_numbers_never_crash_the_runs_table(tmp_path, platform):
    path = _log(tmp_path, "huge.txt", [
        "+ srun --ntasks=" + "9" * 30 + " ./run.sh", "DGXNNODES=" + "8" * 25,
        _rec("submission_platform", platform), _rec("global_batch_size", 10 ** 30),
        _rec("local_batch_size", 1), _rec("gradient_accumulation_steps", 1)])
    ds = dptrace.load(path)
    row = ds.runs.iloc[0]
    assert pd.isna(row["nodes"]) and pd.isna(row["world_size"])


def _frame(pairs: list[tuple[str, str]]) -> pd.DataFrame:
    return pd.DataFrame({"key": [k for k, _ in pairs], "value": [v for _, v in pairs],
                         "rank": pd.array([None] * len(pairs), dtype="Int64")})


def test_variables_and_platform_state_the_size(tmp_path):
    # NVIDIA's MLPerf configs: DGXNNODES x DGXNGPU; the platform 'x4A100' agrees
    path = _log(tmp_path, "env.txt", [
        "+ DGXNNODES=2", "+ DGXNGPU=4", "+ echo ${DGXNNODES}",
        _rec("submission_platform", "2xXE8545x4A100-SXM-40GB")])
    ds = dptrace.load(path)
    assert ds.runs["world_size"].item() == 8 and ds.runs["nodes"].item() == 2
    assert ds.runs["world_size_from"].item() == "'DGXNNODES=2' x 'DGXNGPU=4'"
    # the platform alone
    only = dptrace.load(_log(tmp_path, "plat.txt", [
        _rec("submission_platform", "8xXE8545x4A100-SXM-40GB")]))
    assert only.runs["world_size"].item() == 32 and only.runs["nodes"].item() == 8
    assert "'x4' in the platform" in only.runs["world_size_from"].item()
    # sources that disagree: the first is used, the other named
    both = dptrace.load(_log(tmp_path, "both.txt", [
        "+ mpirun -np 16 ./train", _rec("submission_platform", "8xXE8545x4A100-SXM-40GB")]))
    assert both.runs["world_size"].item() == 16
    assert "says 32" in both.runs["world_size_from"].item()


def test_per_device_events_are_multiplied_where_the_speedometer_says_so(tmp_path):
    # a synthetic log: 8 ranks (srun --ntasks=8); the 'throughput' events are per device
    # (100), MXNet's Speedometer lines the job's (800)
    lines = ["+ srun --ntasks=8 --ntasks-per-node=8 ./run.sh"]
    for i in range(10):
        lines.append(f"Node[0] Epoch[0] Batch [{20 * i}-{20 * i + 20}]\tSpeed: 800.00 "
                     "samples/sec\taccuracy=0.1")
        lines.append(_rec("throughput", 100.0, 1_600_000_000_000 + i))
    ds = dptrace.load(_log(tmp_path, "perdev.txt", lines))
    assert ds.runs["world_size"].item() == 8
    fig = _figures(ds).iloc[0]
    assert (fig["metric"], fig["how"], fig["value"]) == ("samples_per_s", "rank0_times_world",
                                                         800.0)
    assert fig["check_agrees"] is True or fig["check_agrees"] == True  # noqa: E712


# ---- real MLPerf logs, by hand -------------------------------------------------------------

#: file -> (world size, nodes, the line that states the world size or None, its text)
WORLD = {
    "mlperf0.7_dell_resnet_n1_4gpu.txt": (4, 1, 23, "mpirun -np 4"),
    "mlperf0.7_dell_resnet_n2_8gpu.txt": (8, 2, 33, "mpirun -np 8"),
    "mlperf0.7_dell_resnet_n4_16gpu.txt": (16, 4, 53, "mpirun -np 16"),
    "mlperf0.7_dell_ssd_n1_4gpu.txt": (4, 1, 23, "mpirun -np 4"),
    "mlperf0.7_dell_ssd_n2_8gpu.txt": (8, 2, 35, "mpirun -np 8"),
    "mlperf0.7_dell_ssd_n4_16gpu.txt": (16, 4, 59, "mpirun -np 16"),
    "mlperf1.0_nv_resnet_mxnet_n1_8gpu.txt": (8, 1, None, "3264 / (d_batch_size 408"),
    "mlperf1.0_nv_resnet_mxnet_n8_64gpu.txt": (64, 8, None, "13056 / (d_batch_size 204"),
    "mlperf1.0_nv_ssd_mxnet_n1_8gpu.txt": (8, 1, None, "912 / (d_batch_size 114"),
    "mlperf1.0_nv_ssd_mxnet_n8_64gpu.txt": (64, 8, None, "1536 / (d_batch_size 24"),
    "mlperf1.0_nv_ssd_mxnet_n128_1024gpu.txt": (1024, 128, None, "3072 / (d_batch_size 3"),
    "mlperf1.0_nv_bert_pytorch_n1_8gpu.txt": (8, 1, None, "ranks 0-7"),
    "mlperf1.0_nv_bert_pytorch_n8_64gpu.txt": (64, 8, None, "ranks 0-63"),
}


@needs_real
@pytest.mark.parametrize("name", sorted(WORLD))
def test_world_size_of_real_logs_by_hand(name):
    path = SCALE / name
    world, nodes, lineno, said = WORLD[name]
    ds = dptrace.load(path)
    r = ds.runs.iloc[0]
    assert (r["world_size"], r["nodes"]) == (world, nodes)
    assert said in r["world_size_from"] and "but" not in r["world_size_from"]
    if lineno is not None:   # the launch line itself, as the file prints it
        text = _line(path, lineno)
        assert text.startswith("+ mpirun ") and f" {said.split()[-2]} {world} " in text
    recs = {r["key"]: r["value"] for r in _records(path)}
    plat = recs["submission_platform"]
    assert plat.startswith(f"{nodes}x")
    if "d_batch_size" in recs:
        assert recs["global_batch_size"] == world * recs["d_batch_size"] * \
            recs["gradient_accumulation_steps"]


@needs_real
def test_azure_world_size_agrees_with_its_own_statements():
    for n, gpus, local in ((1, 8, 32), (2, 16, 16), (8, 64, 4)):
        path = SCALE / f"mlperf2.0_azure_nd96amsr_ssd_n{n}_{gpus}gpu_ncclinfo.txt"
        ds = dptrace.load(path)
        assert (ds.runs["world_size"].item(), ds.runs["nodes"].item()) == (gpus, n)
        ev = ds["mllog"]
        world, why, nodes = ml.world_of(ev)
        assert (world, nodes) == (gpus, n) and f"local_batch_size {local}" in why
        assert "but" not in why


@needs_real
def test_nv_resnet_job_figure_is_the_mllog_mean_after_warmup():
    for name, n in (("mlperf1.0_nv_resnet_mxnet_n1_8gpu.txt", 35),
                    ("mlperf1.0_nv_resnet_mxnet_n8_64gpu.txt", 45)):
        path = SCALE / name
        printed = [r["value"] for r in _records(path) if r["key"] == "throughput"]
        assert len(printed) == n
        drop = max(1, int(0.1 * n))
        fig = _figures(dptrace.load(path)).iloc[0]
        assert fig["metric"] == "samples_per_s" and fig["how"] == "steady_global"
        assert fig["value"] == pytest.approx(sum(printed[drop:]) / (n - drop))
        assert "MLLOG 'throughput'" in fig["rule"]
        # the check: the Speedometer lines ('Speed: 15680.13 samples/sec'), read by the
        # training-log format: their mean after warm-up, within 5%
        speed = [float(x.split("Speed: ")[1].split()[0]) for x in
                 path.read_text().splitlines() if "\tSpeed: " in x]
        assert "lines" in fig["check_name"] and fig["check_agrees"]
        assert fig["check_value"] == pytest.approx(np.mean(speed), rel=0.05)


@needs_real
def test_scaling_of_mlperf_sets_without_labels():
    sets = {
        "dell resnet": ([f"mlperf0.7_dell_resnet_n{n}_{4 * n}gpu.txt" for n in (1, 2, 4)],
                        [4, 8, 16]),
        "nv resnet": ([f"mlperf1.0_nv_resnet_mxnet_n{n}_{8 * n}gpu.txt" for n in (1, 8)],
                      [8, 64]),
        "nv ssd": ([f"mlperf1.0_nv_ssd_mxnet_n{n}_{8 * n}gpu.txt" for n in (1, 8, 128)],
                   [8, 64, 1024]),
    }
    for what, (files, workers) in sets.items():
        ds = dptrace.load([str(SCALE / f) for f in files])
        table = scaling.scaling({"throughput.job": _figures(ds)}, ds.runs)
        table = table[table["metric"] == "samples_per_s"]
        assert list(table["workers"]) == workers, what
        assert table["missing"].eq("").all(), what
        # by hand: efficiency = (T(N) / T(N0)) / (N / N0) of the job figures
        t = table["job_value"].to_numpy()
        expect = (t / t[0]) / (np.array(workers) / workers[0])
        assert table["efficiency"].to_numpy() == pytest.approx(expect)
    # Dell ResNet-50: the epochs' figure (5,593.7, 11,240.3, 22,146.4 samples/s)
    ds = dptrace.load([str(SCALE / f) for f in sets["dell resnet"][0]])
    eff = scaling.scaling({"throughput.job": _figures(ds)}, ds.runs)["efficiency"]
    assert eff.tolist() == pytest.approx([1.0, 11240.3 / 5593.7 / 2, 22146.4 / 5593.7 / 4],
                                         abs=1e-4)
