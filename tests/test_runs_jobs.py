"""Which inputs are one job (dptrace/jobs.py): a folder of unrelated jobs is one run per job,
the traces of one job's ranks are one run and join the log beside them, the launcher comes
from the lines' prefixes before the file's name. Each case is built from real files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import jobs, runs

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures"
EXAMPLES = ROOT / "examples" / "data"
REAL = ROOT.parent / "shared" / "realdata"
SLOW = FIX / "torchtrace" / "slow_rank1"          # ranks 0 and 1 of one real 2-rank job
BALANCED = FIX / "torchtrace" / "balanced"        # another real 2-rank job
HVD_MPI = FIX / "horovod_mpi"                     # three real Horovod + mpitrace job folders
# a real training log that states no world size (Horovod TF2 on CPU, 8 ranks unprefixed)
QUIET_LOG = FIX / "trainlog" / "alcfws_horovod_tf2_cpu_n8.out"
# a real log that states its world: 16 (HF Trainer 'Num processes' / DeepSpeed launcher)
LOG16 = FIX / "trainlog" / "dschat_check7b_16gpu_training.log"


def _run_of(ds: dptrace.Dataset) -> dict[str, str]:
    return {Path(s).name: str(r) for s, r in zip(ds.sources["source"], ds.sources["run"],
                                                 strict=True)}


def test_the_quick_start_folder_is_one_run_per_job():
    """examples/data holds five jobs: a Horovod timeline, two training logs, a SambaNova doc
    and a Theta mpitrace job in its folder. No finding links two of them."""
    ds = dptrace.load(EXAMPLES)
    assert ds.run_ids == ["andrewor14_horovod_timeline_2019_4rank.json",
                          "bigscience_hf_ds_gpt2_n16_bs4.out", "dschat_step1_opt1.3b_gbs128.log",
                          "ug_sn30_multinode_from_docs.md", "mpitrace_theta_knl32"]
    runs_ = ds.runs.set_index("run")
    # the timeline's own 4 ranks; the profiles' 'MPI_COMM_WORLD size 32' and job 19013
    assert runs_.loc["andrewor14_horovod_timeline_2019_4rank.json", "world_size"] == 4
    assert runs_.loc["mpitrace_theta_knl32", "world_size"] == 32
    assert runs_.loc["mpitrace_theta_knl32", "job_id"] == "19013"
    assert runs_["sources"].tolist() == [1, 1, 1, 1, 3]
    found = dptrace.findings(ds)
    subjects = {(str(r), str(s)) for r, s in zip(found["run"], found["subject"], strict=True)}
    for run, message in zip(found["run"], found["message"], strict=True):
        if "Likely cause" not in message:
            continue
        cause = message.split("Likely cause, listed above:")[1].split(".")[0]
        for part in cause.split(";"):
            subject = part.strip().rsplit(" (", 1)[0]
            assert (str(run), subject) in subjects, (run, message)
    # the straggler rank of job 19013 is named in its run, the timeline's in its own
    by_kind = {(str(r), k) for r, k in zip(found["run"], found["kind"], strict=True)}
    assert ("mpitrace_theta_knl32", "compute_straggler") in by_kind
    assert ("andrewor14_horovod_timeline_2019_4rank.json", "compute_straggler") not in by_kind


def test_a_parent_folder_of_job_folders_is_one_run_per_job_folder():
    ds = dptrace.load(HVD_MPI)
    assert ds.run_ids == ["delayed_r2", "normal", "small"]
    run_of = {str(Path(s).relative_to(HVD_MPI)): str(r)
              for s, r in zip(ds.sources["source"], ds.sources["run"], strict=True)}
    for name, run in run_of.items():    # each folder's profiles, stdout and timeline
        if "/" in name:
            assert run == name.split("/")[0], name
    r = ds.runs.set_index("run")
    assert r.loc["delayed_r2", "world_size"] == 3 and r.loc["delayed_r2", "job_id"] == "27733"
    assert r.loc["normal", "job_id"] == "27406" and r.loc["small", "job_id"] == "27388"
    assert r.loc["delayed_r2", "sources"] == 5          # 3 profiles, stdout.log, timeline.json


def _traces_beside(tmp_path: Path, log: Path, traces: Path = SLOW) -> tuple[Path, list[str]]:
    """A job's output as a user has it: its log and the rank traces in traces/, named as
    tensorboard_trace_handler names them (worker name and time, no 'rank')."""
    job = tmp_path / "job"
    (job / "traces").mkdir(parents=True)
    shutil.copy(log, job / "slurm-41.out")
    names = []
    for k, src in enumerate(sorted(traces.glob("*.json.gz"))):
        name = f"nid00{k}.{1700000000 + k}.pt.trace.json.gz"
        shutil.copy(src, job / "traces" / name)
        names.append(str(job / "traces" / name))
    return job, names


def test_the_traces_of_one_jobs_ranks_given_as_files_are_one_run_with_their_log(tmp_path):
    job, traces = _traces_beside(tmp_path, QUIET_LOG)
    ds = dptrace.load([str(job / "slurm-41.out"), *traces])
    assert ds.run_ids == ["job 41"]
    assert ds.runs.iloc[0]["world_size"] == 2      # distributedInfo world_size 2, ranks 0-1
    assert sorted(ds["torch_traces"]["rank"].tolist()) == [0, 1]
    # the collective straggler of the traces is a finding of that one run (rank 1 was made
    # slow on purpose: make_traces.py ... 1)
    found = dptrace.findings(ds)
    straggler = found[found["kind"] == "collective_straggler"]
    assert straggler["subject"].tolist() == ["rank 1"]
    assert straggler["run"].astype(str).tolist() == ["job 41"]
    # the same given as the folder
    ds2 = dptrace.load(job)
    assert ds2.run_ids == ["job"]


def test_traces_of_another_world_size_do_not_join_a_log(tmp_path):
    job, traces = _traces_beside(tmp_path, LOG16)
    ds = dptrace.load([str(job / "slurm-41.out"), *traces])
    assert ds.run_ids == ["job 41", Path(traces[0]).name]
    assert ds.runs.set_index("run")["world_size"].tolist() == [16, 2]


def test_traces_claiming_one_rank_twice_are_two_jobs(tmp_path):
    """Two real 2-rank jobs' traces in one folder: ranks 0, 1 of each, spans apart or not,
    no group holds rank 0 twice."""
    d = tmp_path / "traces"
    d.mkdir()
    for job in (SLOW, BALANCED):
        for f in job.glob("*.json.gz"):
            shutil.copy(f, d / f"{job.name}_{f.name}")
    ds = dptrace.load(d)
    assert len(ds.run_ids) == 2
    tt = ds["torch_traces"]
    for _, g in tt.groupby("run", observed=True):
        assert sorted(g["rank"].tolist()) == [0, 1]


def test_files_nothing_reads_make_no_run_of_their_own(tmp_path):
    d = tmp_path / "fixtures"
    shutil.copytree(FIX / "torchtrace", d)
    ds = dptrace.load(d)
    assert ds.run_ids == ["balanced", "one_step", "slow_rank1"]
    assert ds.runs["sources"].tolist() == [2, 1, 2]      # README, script: not inputs
    assert ds.sources["run"].notna().all()


def test_a_timeline_beside_several_logs_is_a_run_of_its_own(tmp_path):
    d = tmp_path / "logs"
    d.mkdir()
    for f in (EXAMPLES / "bigscience_hf_ds_gpt2_n16_bs4.out",
              EXAMPLES / "dschat_step1_opt1.3b_gbs128.log",
              EXAMPLES / "andrewor14_horovod_timeline_2019_4rank.json"):
        shutil.copy(f, d / f.name)
    ds = dptrace.load(d)
    assert len(ds.run_ids) == 3


def test_a_log_beside_a_jobs_profiles_joins_it_and_a_timeline_too():
    """delayed_r2: mpi_profile.27733.{0,1,2}, stdout.log (no job id), timeline.json."""
    files = sorted(str(p) for p in (HVD_MPI / "delayed_r2").iterdir())
    ds = dptrace.load(files)
    assert ds.run_ids == ["job 27733"]


def test_stdout_and_stderr_of_one_process_are_one_job(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(QUIET_LOG, d / "train.out")
    shutil.copy(EXAMPLES / "dschat_step1_opt1.3b_gbs128.log", d / "train.err")
    shutil.copy(EXAMPLES / "bigscience_hf_ds_gpt2_n16_bs4.out", d / "other.log")
    ds = dptrace.load(d)
    assert _run_of(ds)["train.out"] == _run_of(ds)["train.err"] != _run_of(ds)["other.log"]


@pytest.mark.parametrize(("prefix", "launcher"), [
    ("[1,{r}]<stdout>:", "mpirun"), ("{r}: ", "srun"), ("[default{r}]:", "torchrun"),
    ("[{r}]<stdout>:", "horovodrun")])
def test_the_launcher_comes_from_the_lines_prefixes_before_the_file_name(tmp_path, prefix,
                                                                         launcher):
    """A slurm-*.out whose lines carry '[1,3]<stdout>:' was launched by mpirun inside the
    allocation; the file's name says only that slurm wrote it."""
    lines = (REAL / "trainlog" / "megatron_ds_gpt3_125M_8gpu.log").read_text().splitlines()
    out = tmp_path / "slurm-5.out"
    out.write_text("".join(prefix.format(r=i % 8) + line + "\n" for i, line in enumerate(lines)))
    ds = dptrace.load(out)
    assert ds.runs.iloc[0]["launcher"] == launcher
    assert ds.runs.iloc[0]["job_id"] == "5"


def test_launcher_in_needs_most_prefixed_lines():
    assert runs.launcher_in(b"[1,0]<stdout>:a\n[1,1]<stdout>:b\n[1,2]<stdout>:c\n") == "mpirun"
    assert runs.launcher_in(b"[1,0]<stdout>:a\n[1,1]<stdout>:b\nplain\n") is None
    assert runs.launcher_in(b"0: a\n1: b\n2: c\n[1,0]<stdout>:x\n[1,1]<stdout>:y\n"
                            b"[1,2]<stdout>:z\n[1,3]<stdout>:w\n") == "mpirun"
    assert runs.launcher_in(b"") is None


def test_trace_units_by_world_ranks_and_spans():
    t = jobs.Trace
    facts = jobs.Facts(formats={i: frozenset({"torchtrace"}) for i in range(5)},
                       traces={0: t(0, 2, 0.0, 10.0), 1: t(1, 2, 5.0, 12.0),
                               2: t(0, 2, 100.0, 110.0), 3: t(1, 2, 101.0, 111.0),
                               4: t(0, 4, 0.0, 10.0)})
    paths = [f"/d/t{i}.json" for i in range(5)]
    units = jobs.group(paths, range(5), "/d", lambda n: None, lambda n: None, facts)
    assert sorted(sorted(u.members) for u in units) == [[0, 1], [2, 3], [4]]


TORCHRUN = FIX / "trainlog" / "generated" / "torchrun_2nodes"


@pytest.mark.parametrize(("name", "line"), [("node0.log", 35), ("node1.log", 36)])
def test_torchrun_states_the_world_its_prefixes_do_not(name, line):
    """One node's torchrun log of a 2-node, 4-process job: '[default0]:' and '[default1]:'
    are local ranks; the agent's 'global_world_sizes=[4, 4]' is the world (issue 29, 2.3)."""
    text = (TORCHRUN / name).read_text().splitlines()
    assert text[line - 1].endswith("global_world_sizes=[4, 4]")
    ds = dptrace.load(TORCHRUN / name)
    r = ds.runs.iloc[0]
    assert r["world_size"] == 4 and r["launcher"] == "torchrun"
    assert f"{name} line {line}" in r["world_size_from"]


def test_a_launch_line_gives_nproc_per_node_times_nnodes(tmp_path):
    """bigscience's Megatron-DeepSpeed run on 16 nodes: '+ export 'LAUNCHER=python -u -m
    torch.distributed.launch --nproc_per_node 4 --nnodes 16 ...' (line 1241): 64."""
    log = FIX / "trainlog" / "bigscience_meg_ds_zero_n16.out"
    assert "--nproc_per_node 4     --nnodes 16" in log.read_text().splitlines()[1240]
    assert dptrace.load(log).runs.iloc[0]["world_size"] == 64
    f = tmp_path / "elastic.log"
    f.write_text("+ torchrun --nnodes 1:4 --nproc_per_node 8 train.py\n")   # a range: no world
    assert pd.isna(dptrace.load(f).runs.iloc[0]["world_size"])
