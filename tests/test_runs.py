"""Runs and ranks: how inputs group into runs, the runs table, the run and rank keys,
and splitting / concatenating a Dataset by run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import runs
from dptrace.cli import main
from dptrace.dataset import Dataset

FIX = Path(__file__).parent / "fixtures"
RUN4 = FIX / "mpitrace" / "mlprof_polaris_run4"          # 8 real Polaris rank profiles
KNL32 = Path(__file__).parent.parent / "examples" / "data" / "mpitrace_theta_knl32"
HF_LOG = FIX / "trainlog" / "bigscience_hf_ds_gpt2_n16_bs4.out"
TIMELINE = FIX / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json"
BAGUA = FIX / "trainlog" / "bagua_net_synthetic_benchmark_from_docs.md"


def _job_dir(tmp_path: Path) -> Path:
    """A job's directory as a user has it: the rank profiles and the job's slurm output
    (a real training log, renamed as slurm names its output)."""
    job = tmp_path / "polaris_job"
    shutil.copytree(RUN4, job)
    shutil.copy(HF_LOG, job / "slurm-359819.out")
    return job


def _every_table_has_runs(ds: Dataset) -> None:
    ids = ds.run_ids
    for name in ds.tables:
        df = ds[name]
        assert df.columns[0] == "run", name
        assert isinstance(df["run"].dtype, pd.CategoricalDtype), name
        assert df["run"].notna().all(), name
        assert list(df["run"].cat.categories) == ids, name
    assert ds.sources["run"].notna().all()


def test_a_directory_is_one_run_with_world_size_from_the_profiles(tmp_path):
    job = _job_dir(tmp_path)
    ds = dptrace.load(job)
    assert ds.run_ids == ["polaris_job"]
    r = ds.runs.iloc[0]
    # every profile of run4 says 8 ranks ('MPI_COMM_WORLD size'); hosts x3000c0s13b0n0, ...
    assert r["world_size"] == 8 and r["world_size_from"] == "mpitrace nranks"
    assert r["nodes"] == ds["mpi_ranks"]["host"].dropna().nunique() == 2
    assert r["job_id"] == "359819" and r["launcher"] == "srun" and r["sources"] == 9
    assert set(ds.sources["run"]) == {"polaris_job"}
    assert len(ds["throughput"]) and len(ds["mpi_ranks"])
    _every_table_has_runs(ds)


def _cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    assert main(["report", *args, "--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_cli_shows_the_job_and_its_slurm_output_as_one_run(tmp_path, capsys):
    job = _job_dir(tmp_path)
    inputs = _cli_json(capsys, str(job))["sections"]["inputs"]["tables"]
    assert {row["run"] for row in inputs["sources"]} == {"polaris_job"}
    [run] = inputs["runs"]
    assert (run["world_size"], run["world_size_from"], run["job_id"]) == \
        (8, "mpitrace nranks", "359819")


def test_files_sharing_a_job_id_are_one_run(tmp_path):
    job = _job_dir(tmp_path)
    files = sorted(str(p) for p in job.iterdir())
    ds = dptrace.load(files)
    assert ds.run_ids == ["job 359819"]
    assert ds.runs.iloc[0]["world_size"] == 8


def test_a_file_beside_one_jobs_files_joins_it_and_a_lone_file_is_its_own_run(tmp_path):
    job = _job_dir(tmp_path)
    shutil.copy(TIMELINE, job / "timeline.json")
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    shutil.copy(BAGUA, elsewhere / "bagua.md")
    ds = dptrace.load([str(job / "slurm-359819.out"), str(job / "timeline.json"),
                       str(elsewhere / "bagua.md")])
    # the Bagua doc holds two benchmark runs ('Running benchmark...' again after the NCCL
    # run's figures): its second is a run of its own
    assert ds.run_ids == ["job 359819", "bagua.md", "bagua.md/2"]
    run_of = dict(zip(ds.sources["source"].map(lambda s: Path(s).name), ds.sources["run"],
                      strict=True))
    assert run_of == {"slurm-359819.out": "job 359819", "timeline.json": "job 359819",
                      "bagua.md": "bagua.md"}
    # the timeline's 4 ranks are its world (no profile in this run)
    assert ds.runs.set_index("run").loc["job 359819", "world_size"] == 4
    assert ds.runs.set_index("run").loc["job 359819", "world_size_from"] == \
        "Horovod timeline ranks"
    # 'Total img/sec on 8 GPU(s)'-style statements give a log's world size
    bagua = ds.runs.set_index("run").loc["bagua.md"]
    assert bagua["world_size_from"] == ("Horovod benchmark: 'Number of GPUs' / 'Total img/sec "
                                        "on N GPU(s)' (bagua.md line 23)")


def test_labelled_runs_from_a_mapping_split_and_concat(tmp_path):
    ds = dptrace.load({"base": str(RUN4), "logs": [str(HF_LOG), str(BAGUA)]})
    # the Bagua doc's second benchmark run is a run of its own, named after the file
    bagua2 = f"logs/{BAGUA.name}/2"
    assert ds.run_ids == ["base", "logs", bagua2]
    assert ds.runs["label"].tolist() == ["base", "logs", bagua2]
    assert ds.runs["sources"].tolist() == [8, 2, 1]
    _every_table_has_runs(ds)
    parts = ds.by_run()
    assert list(parts) == ["base", "logs", bagua2]
    assert parts["base"].tables == [t for t in ds.tables if t.startswith("mpi_")]
    assert "throughput" in parts["logs"].tables and "mpi_ranks" not in parts["logs"].tables
    assert ds.run("logs").sources["run"].tolist() == ["logs", "logs"]
    again = Dataset.concat(parts.values())
    assert again.tables == ds.tables or sorted(again.tables) == sorted(ds.tables)
    for name in ds.tables:
        pd.testing.assert_frame_equal(again[name], ds[name])
    pd.testing.assert_frame_equal(again.sources, ds.sources)
    pd.testing.assert_frame_equal(again.runs, ds.runs)
    with pytest.raises(KeyError, match="no run 'nope'"):
        ds.run("nope")


def test_concat_renames_a_run_id_already_taken():
    a = dptrace.load({"x": str(RUN4)})
    b = dptrace.load({"x": str(HF_LOG)})
    both = Dataset.concat([a, b])
    assert both.run_ids == ["x", "x#2"]
    assert both.runs["label"].tolist() == ["x", "x"]
    assert set(both["mpi_ranks"]["run"]) == {"x"}
    assert set(both["throughput"]["run"]) == {"x#2"}
    _every_table_has_runs(both)


def test_label_equals_path_on_the_command_line(tmp_path, capsys):
    inputs = _cli_json(capsys, f"before={RUN4}", f"after={KNL32}")["sections"]["inputs"]["tables"]
    assert [(r["run"], r["world_size"]) for r in inputs["runs"]] == [("before", 8),
                                                                      ("after", 32)]
    # a path that exists as written is a path, even with '=' in its name
    odd = tmp_path / "a=b"
    shutil.copytree(RUN4, odd)
    assert runs.command_line([str(odd)]) == [runs.Argument(str(odd))]
    assert runs.command_line(["base=x/y"]) == [runs.Argument("x/y", "base")]


def test_two_directories_with_one_name_get_two_ids(tmp_path):
    (tmp_path / "a" / "run").mkdir(parents=True)
    (tmp_path / "b" / "run").mkdir(parents=True)
    shutil.copy(HF_LOG, tmp_path / "a" / "run" / "x.out")
    shutil.copy(BAGUA, tmp_path / "b" / "run" / "y.md")
    ds = dptrace.load([tmp_path / "a" / "run", tmp_path / "b" / "run"])
    assert ds.run_ids == ["run", "run#2", "run#2/2"]  # y.md's second benchmark run
    assert ds.runs["label"].tolist() == ["run", "run", "run/2"]


@pytest.mark.parametrize(("line", "instance", "rank"), [
    ("3: e2e samples_per_sec: 1.5", "3", 3),                 # srun --label
    ("[1,2]<stdout>: e2e samples_per_sec: 1.5", "2", 2),     # mpirun --tag-output
    ("[default3]:e2e samples_per_sec: 1.5", "default3", None),  # torchrun: a local rank
    ("e2e samples_per_sec: 1.5", "0", None),                 # nobody said
])
def test_rank_in_training_logs_only_where_a_launcher_says_it(tmp_path, line, instance, rank):
    log = tmp_path / "x.log"
    log.write_text(line + "\n")
    tp = dptrace.load(log)["throughput"]
    assert tp["instance"].tolist() == [instance]
    assert tp["rank"].dtype == "Int64"
    got = tp["rank"].iloc[0]
    assert (got is pd.NA and rank is None) or got == rank


def test_launcher_prefixes_of_every_rank_give_the_world_size(tmp_path):
    log = tmp_path / "job.log"
    log.write_text("".join(f"{r}: e2e samples_per_sec: {100 + r}.5\n" for r in range(4)))
    run = dptrace.load(log).runs.iloc[0]
    assert run["world_size"] == 4
    assert run["world_size_from"] == "ranks 0-3 printed"


def test_job_ids_from_file_names():
    assert runs.job_id("slurm-1832555.out") == ("1832555", "srun")
    assert runs.job_id("x/bigscience_n4_slurm-1832555.out.gz") == ("1832555", "srun")
    assert runs.job_id("slurm-12_3.out") == ("12", "srun")
    assert runs.job_id("mpi_profile.406118.0") == ("406118", None)
    assert runs.job_id("mpi_profile.4242.1.translated.txt") == ("4242", None)
    assert runs.job_id("train.o98765") == ("98765", None)
    assert runs.job_id("notes.md") == (None, None)


def test_an_empty_load_has_an_empty_runs_table(tmp_path):
    ds = dptrace.load(tmp_path)
    assert ds.runs.columns.tolist()[:4] == ["run", "label", "job_id", "world_size"]
    assert ds.by_run() == {} or all(len(v.sources) == 0 for v in ds.by_run().values())


@pytest.mark.parametrize("values", [
    pd.array([3, None, 0, 3, 7, None], dtype="Int64"),              # ranks, counted
    pd.array([2**40, -5, None, 2**40], dtype="Int64"),               # not small: sorted
    pd.array([None, None], dtype="Int64"),
    pd.array([], dtype="Int64"),
    pd.array([1, 1, 65535, 65536], dtype="Int32"),
    pd.Categorical(["b", None, "a", "b"], categories=["z", "b", "a"]),  # 'z' unused
    pd.Categorical([None]),
    pd.Series(["x", None, "y", "x"], dtype=object).array,
])
def test_distinct_values_of_a_column_are_pandas_unique_values(values):
    s = pd.Series(values)
    want = {v for v in s.unique().tolist() if not pd.isna(v)}
    got = runs.distinct(s)
    assert sorted(map(str, got)) == sorted(map(str, want)) and len(got) == len(want)
