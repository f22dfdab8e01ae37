"""dptrace.fleet.engines: one function over many tasks on serial, processes and Dask engines
(issue 33, item 3). Every engine gives the same results; a task's failure, death or timeout
is that task's result, never the run's."""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import os
import signal
import time
from pathlib import Path

import pytest

from dptrace.fleet import engines
from dptrace.fleet.engines import WorkerDied, run_tasks

FIXTURES = Path(__file__).parent / "fixtures"

#: real job folders of three formats (mpitrace rank files, a straggler's per-rank logs, an
#: NCCL log, a Horovod timeline, a training log)
FOLDERS = [
    FIXTURES / "mpitrace" / "mlprof_polaris2n_horovod",
    FIXTURES / "mpitrace" / "alcfws_theta_knl32",
    FIXTURES / "straggler" / "delayed_r2",
    FIXTURES / "straggler" / "balanced",
    FIXTURES / "nccl" / "tflogs_4rank_j8_rank.0_stderr.log",
    FIXTURES / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json",
    FIXTURES / "trainlog" / "bigscience_hf_ds_gpt2_n16_bs4.out",
]


# --- task functions (module level: picklable, importable by a spawned worker) ---------------

def square(x: int) -> int:
    return x * x


def fail_on_3(x: int) -> int:
    if x == 3:
        raise ValueError(f"task {x} fails")
    return x


def sleep_on_1(x: int) -> int:
    if x == 1:
        time.sleep(60)
    return x


def die_on_2(x: int) -> int:
    if x == 2:
        os.kill(os.getpid(), signal.SIGKILL)   # as the OOM killer does
    return x


def segfault_on_2(x: int) -> int:
    if x == 2:
        faulthandler.disable()   # pytest's handler would print this worker's stack
        ctypes.string_at(0)   # a read of address 0: SIGSEGV
    return x


def exit_on_2(x: int) -> int:
    if x == 2:
        os._exit(7)
    return x


class Unpicklable(Exception):
    def __init__(self, a: int, b: int) -> None:   # pickles, but unpickling calls __init__(msg)
        super().__init__(f"{a}/{b}")


def raise_unpicklable(x: int) -> int:
    raise Unpicklable(x, x)


def summary(path: str) -> tuple:
    """A small summary of one job folder parsed in the task: rows per table, runs and their
    world sizes, problems (``executor="serial"``: a task never starts a pool of its own)."""
    import pandas as pd

    import dptrace
    ds = dptrace.load(path, executor="serial")
    runs = ds.runs
    worlds = [None if pd.isna(w) else int(w) for w in runs["world_size"]]   # NA: not stated
    return (tuple(sorted((name, len(frame)) for name, frame in ds.items())),
            tuple(zip(runs["run"].astype(str), worlds, strict=True)),
            len(ds.problems))


def by_task(pairs) -> dict:
    """Results by task; exceptions as (type, message) so that engines compare equal."""
    out = {}
    for task, result in pairs:
        assert task not in out, f"task {task!r} came back twice"
        out[task] = (type(result), str(result)) if isinstance(result, BaseException) else result
    return out


# --- serial and processes ---------------------------------------------------------------------

@pytest.mark.parametrize("engine", ["serial", "processes", "auto"])
def test_pure_function_same_on_every_local_engine(engine: str) -> None:
    got = by_task(run_tasks(square, range(50), engine=engine, workers=2))
    assert got == {x: x * x for x in range(50)}


def test_processes_yields_as_tasks_complete() -> None:
    """A slow first task does not hold back the quick ones behind it."""
    order = [task for task, _ in run_tasks(time.sleep, [1.0, 0.0, 0.0, 0.0],
                                           engine="processes", workers=2)]
    assert order[-1] == 1.0
    assert sorted(order) == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("engine", ["serial", "processes"])
def test_failure_is_the_tasks_result(engine: str) -> None:
    got = dict(run_tasks(fail_on_3, range(6), engine=engine, workers=2))
    assert isinstance(got[3], ValueError) and str(got[3]) == "task 3 fails"
    assert {k: v for k, v in got.items() if k != 3} == {0: 0, 1: 1, 2: 2, 4: 4, 5: 5}
    if engine == "processes":   # the worker's traceback rides along
        assert "fail_on_3" in str(got[3].__cause__)


@pytest.mark.parametrize("engine", ["serial", "processes"])
def test_timeout_is_the_tasks_result(engine: str) -> None:
    start = time.monotonic()
    got = dict(run_tasks(sleep_on_1, range(4), engine=engine, workers=2, timeout=1.0))
    assert time.monotonic() - start < 15
    assert isinstance(got[1], TimeoutError)
    assert {k: v for k, v in got.items() if k != 1} == {0: 0, 2: 2, 3: 3}


@pytest.mark.parametrize("fn, words", [(die_on_2, "SIGKILL"), (segfault_on_2, "SIGSEGV"),
                                       (exit_on_2, "exit code 7")])
def test_dead_worker_costs_only_its_task(fn, words: str) -> None:
    got = dict(run_tasks(fn, range(8), engine="processes", workers=2))
    assert isinstance(got[2], WorkerDied) and words in str(got[2])
    assert {k: v for k, v in got.items() if k != 2} == {x: x for x in range(8) if x != 2}


def test_unpicklable_exception_comes_back_as_text() -> None:
    (task, result), = run_tasks(raise_unpicklable, [5], engine="processes", workers=2)
    assert task == 5 and isinstance(result, RuntimeError) and "Unpicklable: 5/5" in str(result)


def test_unpicklable_task_is_its_own_failure() -> None:
    import threading
    lock = threading.Lock()
    got = list(run_tasks(id, [1, lock, 2], engine="processes", workers=2))
    results = {id(t): r for t, r in got}
    assert isinstance(results[id(lock)], TypeError)
    assert sorted(r for t, r in got if t is not lock) == sorted([id(1), id(2)])


@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_processes_on_every_start_method(method: str) -> None:
    got = by_task(run_tasks(square, range(6), engine="processes", workers=2,
                            config={"start_method": method}))
    assert got == {x: x * x for x in range(6)}


def test_workers_that_cannot_start_stop_the_call(tmp_path: Path, monkeypatch) -> None:
    """A function a spawned worker cannot import (its module is gone) kills every worker as
    it starts: after three in a row the call raises, naming the likely cause, instead of
    failing every task or starting workers forever."""
    import importlib
    import sys
    (tmp_path / "fleet_gone_module.py").write_text("def f(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fn = importlib.import_module("fleet_gone_module").f
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(tmp_path)])
    (tmp_path / "fleet_gone_module.py").unlink()
    with pytest.raises(RuntimeError, match="die as they start .*exit code 1.*3 in a row"):
        list(run_tasks(fn, range(4), engine="processes", workers=2,
                       config={"start_method": "spawn"}))
    sys.modules.pop("fleet_gone_module", None)


def test_timeout_counts_from_the_task_not_the_workers_start() -> None:
    """Under spawn a worker imports for a second or more before its first task; a task's
    timeout starts when it reaches a ready worker."""
    got = dict(run_tasks(square, range(4), engine="processes", workers=2, timeout=0.5,
                         config={"start_method": "spawn"}))
    assert got == {x: x * x for x in range(4)}


def test_closing_early_stops_the_workers() -> None:
    import multiprocessing
    it = run_tasks(sleep_on_1, range(10), engine="processes", workers=2)
    next(it)
    assert multiprocessing.active_children()
    it.close()
    assert not [p for p in multiprocessing.active_children()
                if p.name == "dptrace-fleet-worker"]


def test_generator_tasks_and_no_tasks() -> None:
    assert list(run_tasks(square, iter([]), engine="processes")) == []
    assert by_task(run_tasks(square, (x for x in range(5)), engine="auto", workers=2)) == {
        x: x * x for x in range(5)}


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="engine must be one of"):
        run_tasks(square, [1], engine="threads")
    with pytest.raises(ValueError, match="workers"):
        run_tasks(square, [1], engine="processes", workers=0)
    with pytest.raises(ValueError, match="timeout"):
        run_tasks(square, [1], timeout=0)


def test_real_folders_same_on_serial_and_processes() -> None:
    tasks = [str(p) for p in FOLDERS]
    serial = by_task(run_tasks(summary, tasks, engine="serial"))
    assert not [r for r in serial.values() if isinstance(r, tuple) and isinstance(r[0], type)]
    # what the inputs state: four rank files of one job, each "Data for MPI rank R of 8";
    # rank 0's file adds its timing summary of all eight ranks: 4 + 8 rows
    tables, runs, _ = serial[str(FOLDERS[0])]
    assert dict(tables)["mpi_ranks"] == 4 + 8
    assert runs == (("mlprof_polaris2n_horovod", 8),)
    got = by_task(run_tasks(summary, tasks, engine="processes", workers=2))
    assert got == serial, {k: (serial[k], got.get(k)) for k in serial if got.get(k) != serial[k]}


def test_engine_config_from_toml(tmp_path: Path) -> None:
    path = tmp_path / "fleet.toml"
    path.write_text('[tool.dptrace.fleet.slurm]\nqueue = "gpu"\ncores = 4\n'
                    '[tool.dptrace.fleet.processes]\nstart_method = "spawn"\ntimeout = 1\n')
    assert engines.engine_config(path, "slurm") == {"queue": "gpu", "cores": 4}
    assert engines.engine_config(path, "processes") == {"start_method": "spawn", "timeout": 1}
    assert engines.engine_config(path, "pbs") == {}
    assert engines.engine_config({"a": 1}, "slurm") == {"a": 1}
    # auto reads the table of the engine it chose: processes' timeout here
    got = dict(run_tasks(sleep_on_1, [0, 1], engine="auto", workers=2, config=path))
    assert got[0] == 0 and isinstance(got[1], TimeoutError)



#: a survey interrupted by Ctrl-C: run_tasks over tasks that never end, in its own process group
INTERRUPTED = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)   # as in a terminal
from dptrace.fleet.engines import run_tasks

def forever(x):
    time.sleep(600)

try:
    for _ in run_tasks(forever, range(8), engine=sys.argv[1], workers=2):
        pass
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from /proc."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()   # after "pid (comm) "
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


@pytest.mark.parametrize("engine", [
    "processes",
    pytest.param("dask", marks=[pytest.mark.slow]),   # a LocalCluster started and closed
])
def test_ctrl_c_stops_every_worker(engine: str) -> None:
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) ends the call with
    KeyboardInterrupt, and no worker (nor a cluster's nanny or scheduler) outlives it."""
    import subprocess
    import sys
    if not Path("/proc/self/stat").exists():
        pytest.skip("needs /proc")
    if engine == "dask":
        pytest.importorskip("distributed")
    proc = subprocess.Popen([sys.executable, "-c", INTERRUPTED, engine], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 60   # until the workers are up (a cluster: seconds)
        while len(group_members(proc.pid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(group_members(proc.pid)) >= 3, "the workers never started"
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert "interrupted" in out
        deadline = time.monotonic() + 10
        while group_members(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert group_members(proc.pid) == []
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# --- Dask -------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dask_cluster():
    """One LocalCluster for this module's Dask tests: 2 worker processes of one thread,
    one task each at a time (worker-saturation 1.0, as the Dask engines set it); a task whose
    worker dies is not retried (allowed-failures 0), as on the process pool."""
    pytest.importorskip("distributed")
    import logging

    import dask
    from distributed import LocalCluster
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}):
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=logging.ERROR)
    try:
        yield cluster
    finally:
        cluster.close()


def dask_url(cluster) -> str:
    return "dask://" + cluster.scheduler_address.removeprefix("tcp://")


@pytest.mark.slow   # a LocalCluster of its own: 4-6 s on 2 cores
def test_dask_local_cluster_same_results() -> None:
    """``engine="dask"`` starts its own LocalCluster, gives what serial gives, closes it."""
    pytest.importorskip("distributed")
    from dptrace.fleet import on_dask
    got = by_task(run_tasks(fail_on_3, range(20), engine="dask", workers=2))
    assert got == by_task(run_tasks(fail_on_3, range(20), engine="serial"))
    assert got[3] == (ValueError, "task 3 fails")
    # its workers run without Dask's statistical profiler (whose history of sampled stacks
    # grew a worker by ~70 KB a survey's run); ``profile = true`` keeps it
    assert set(dict(run_tasks(on_dask.profiler_state, range(2), engine="dask", workers=1)).values()) \
        == {((), 0)}
    kept = dict(run_tasks(on_dask.profiler_state, range(2), engine="dask", workers=1,
                          config={"profile": True}))
    assert all(names == tuple(sorted(on_dask.PROFILER_CALLBACKS)) for names, _ in kept.values())


def test_stop_profiler_takes_out_the_callbacks_and_the_history() -> None:
    from collections import deque

    from dptrace.fleet import on_dask

    class Callback:
        stopped = False

        def stop(self) -> None:
            self.stopped = True

    class Worker:
        def __init__(self) -> None:
            self.periodic_callbacks = {"profile": Callback(), "profile-cycle": Callback(),
                                       "heartbeat": Callback()}
            self.profile_history = deque([(1.0, {})])
            self.profile_keys_history = deque([(1.0, {})])

    w = Worker()
    cbs = dict(w.periodic_callbacks)
    on_dask.stop_profiler(w)
    assert list(w.periodic_callbacks) == ["heartbeat"] and not cbs["heartbeat"].stopped
    assert cbs["profile"].stopped and cbs["profile-cycle"].stopped
    assert not w.profile_history and not w.profile_keys_history
    on_dask.stop_profiler(object())   # a worker without them: nothing to do
    with pytest.raises(ValueError, match="profile: true or false"):
        list(run_tasks(square, [1], engine="dask", config={"profile": "sometimes"}))


def test_existing_cluster_keeps_its_profiler(dask_cluster) -> None:
    """``dask://``: the workers are the user's, their profiler left as their config says."""
    from dptrace.fleet import on_dask
    got = dict(run_tasks(on_dask.profiler_state, range(2), engine=dask_url(dask_cluster)))
    assert all(names == tuple(sorted(on_dask.PROFILER_CALLBACKS)) for names, _ in got.values())


def test_dask_existing_scheduler(dask_cluster) -> None:
    url = dask_url(dask_cluster)
    assert by_task(run_tasks(square, range(50), engine=url)) == {x: x * x for x in range(50)}
    got = dict(run_tasks(fail_on_3, range(6), engine=url))
    assert isinstance(got[3], ValueError) and str(got[3]) == "task 3 fails"


def test_dask_timeout_and_dead_worker(dask_cluster) -> None:
    url = dask_url(dask_cluster)
    got = dict(run_tasks(sleep_on_1, range(4), engine=url, timeout=1.0))
    assert isinstance(got[1], TimeoutError)
    assert {k: v for k, v in got.items() if k != 1} == {0: 0, 2: 2, 3: 3}
    from distributed import KilledWorker
    got = dict(run_tasks(die_on_2, range(6), engine=url))
    assert isinstance(got[2], KilledWorker)
    assert {k: v for k, v in got.items() if k != 2} == {x: x for x in range(6) if x != 2}


@pytest.mark.slow   # each worker imports dptrace and pandas: 5-10 s on 2 cores
def test_dask_real_folders_same_as_serial(dask_cluster) -> None:
    tasks = [str(p) for p in FOLDERS]
    serial = by_task(run_tasks(summary, tasks, engine="serial"))
    got = by_task(run_tasks(summary, tasks, engine=dask_url(dask_cluster)))
    assert got == serial, {k: (serial[k], got.get(k)) for k in serial if got.get(k) != serial[k]}


def test_dask_executor_maps_in_order(dask_cluster) -> None:
    from distributed import Client

    from dptrace.fleet.engines import DaskExecutor
    with Client(dask_cluster) as client:
        client.wait_for_workers(2, timeout=60)   # a worker killed by an earlier test is back
        executor = DaskExecutor(client)
        assert executor.workers == 2
        assert list(executor.map(square, range(30))) == [x * x for x in range(30)]
        assert executor.start(square, 7)() == 49
        with pytest.raises(ValueError, match="task 3 fails"):
            list(executor.map(fail_on_3, range(6)))


class CountingExecutor:
    """An executor that counts the pieces mapped through it (the load really split)."""

    def __init__(self, inner) -> None:
        self.inner, self.pieces = inner, 0

    @property
    def workers(self) -> int:
        return self.inner.workers

    def map(self, fn, items):
        items = list(items)
        self.pieces += len(items)
        return self.inner.map(fn, items)


#: real inputs whose reader splits a plain file into self-contained pieces, and the module
#: whose size thresholds decide the split (lowered here so that a fixture splits)
SPLIT_INPUTS = [
    pytest.param(FIXTURES / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json",
                 "dptrace.formats._chrome", id="horovod"),
    pytest.param(FIXTURES / "trainlog" / "mlprof_deepspeed_thetagpu_16gpu.log",
                 "dptrace.formats.trainlog.read", id="trainlog"),
    pytest.param(FIXTURES / "nccl" / "polaris_resnet50_ddp_2n8gpu_OFI_TIMEOUT_2025-06-26.log",
                 "dptrace.formats.nccl.read", id="nccl"),
]


@pytest.mark.slow   # the workers import every reader: 3-12 s a case on 2 busy cores
@pytest.mark.parametrize("path, module", SPLIT_INPUTS)
def test_dask_executor_splits_one_real_input(dask_cluster, monkeypatch, path, module) -> None:
    """``dptrace.load(path, executor=DaskExecutor(client))``: the reader's pieces of one
    input run on the Dask workers, and the tables equal a serial load's."""
    import importlib

    import pandas as pd
    from distributed import Client

    import dptrace
    from dptrace.fleet.engines import DaskExecutor
    reader = importlib.import_module(module)
    monkeypatch.setattr(reader, "PARALLEL_BYTES", 1 << 16)
    if hasattr(reader, "RANGE_BYTES"):
        monkeypatch.setattr(reader, "RANGE_BYTES", 1 << 18)
    serial = dptrace.load(str(path), executor="serial")
    with Client(dask_cluster) as client:
        executor = CountingExecutor(DaskExecutor(client))
        ds = dptrace.load(str(path), executor=executor)
    assert executor.pieces >= 2
    assert sorted(ds.keys()) == sorted(serial.keys()) and list(serial.keys())
    for name, frame in serial.items():
        pd.testing.assert_frame_equal(ds[name], frame)


def test_without_distributed_the_error_names_the_extra(monkeypatch) -> None:
    import builtins
    real_import = builtins.__import__

    def no_dask(name, *args, **kwargs):
        if name.split(".")[0] in ("distributed", "dask_jobqueue"):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_dask)
    for engine in ("dask", "dask://127.0.0.1:8786", "slurm", "pbs"):
        with pytest.raises(ImportError, match=r"pip install 'dptrace\[dask\]'"):
            run_tasks(square, [1, 2], engine=engine)


# --- Slurm: the documented config's job script ------------------------------------------------

DOCS = Path(__file__).parent.parent / "docs" / "fleet-engines.md"
SNAPSHOT = FIXTURES / "fleet" / "slurm_job_script.txt"


def documented_block(after: str, lang: str) -> str:
    """The first ```lang block of docs/fleet-engines.md after the line holding ``after``."""
    text = DOCS.read_text()
    start = text.index(f"```{lang}\n", text.index(after)) + len(lang) + 4
    return text[start:text.index("```", start)]


def test_slurm_job_script_of_the_documented_config(tmp_path: Path) -> None:
    """``SLURMCluster(...).job_script()`` for the TOML of docs/fleet-engines.md, equal to the
    snapshot (the Python path and the scheduler's address, which vary, normalised) and to the
    script the docs show."""
    pytest.importorskip("dask_jobqueue")
    import re
    import sys

    from dptrace.fleet import on_dask
    path = tmp_path / "fleet.toml"
    path.write_text(documented_block("the snapshot test", "toml"))
    config = engines.engine_config(path, "slurm")
    assert config["adapt"] == {"minimum": 0, "maximum": 256} and config["timeout"] == 600
    # the scheduler listens on this machine's loopback: it has no ib0 (the workers keep it)
    cluster = on_dask.jobqueue_cluster("slurm", config, scheduler_options={
        "interface": "lo", "dashboard_address": ":0"})
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    script = script.replace(sys.executable, "PYTHON")
    script = re.sub(r"tcp://[0-9.]+:\d+", "tcp://SCHEDULER:PORT", script)
    assert script == SNAPSHOT.read_text()
    assert script.strip() == documented_block("tested as a snapshot", "sh").strip()
    # what the config states, line by line
    for line in ("#SBATCH -p cpu", "#SBATCH -A proj123", "#SBATCH -t 02:00:00",
                 "#SBATCH --cpus-per-task=32", "#SBATCH --exclusive",
                 "#SBATCH --constraint=cpu", "module load python/3.11"):
        assert line in script.splitlines()
    assert "--nthreads 1 " in script and "--nworkers 32 " in script   # a process per core
    assert "--local-directory $TMPDIR --interface ib0" in script


@pytest.mark.slow   # batch jobs as local processes: a worker started per job, 5-15 s
def test_batch_scheduler_engine_end_to_end_on_local_jobs(monkeypatch) -> None:
    """The ``slurm`` engine's whole path (config section, cluster, adapt, tasks, close) with
    dask-jobqueue's own stand-in for a batch system, whose jobs are local processes; no job
    (worker process) is left after the call."""
    pytest.importorskip("dask_jobqueue")
    import operator

    import psutil

    from dptrace.fleet import on_dask
    monkeypatch.setitem(on_dask.JOBQUEUE_CLASSES, "slurm", "dask_jobqueue.local:LocalCluster")
    config = {"cores": 1, "memory": "1GB", "walltime": "00:10:00", "interface": "lo",
              "adapt": {"minimum": 1, "maximum": 2},
              "scheduler_options": {"dashboard_address": ":0"}}
    got = dict(run_tasks(operator.neg, range(20), engine="slurm", config=config))
    assert got == {x: -x for x in range(20)}
    # the batch jobs' workers read their own configuration: the plugin stops their profiler
    # (a function of dptrace's: the jobs' workers cannot import the tests)
    got = dict(run_tasks(on_dask.profiler_state, range(3), engine="slurm", config=config))
    assert got and all(v == ((), 0) for v in got.values())

    def jobs() -> list:
        out = []
        for p in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if "dask_worker" in " ".join(p.cmdline()) and p.status() != "zombie":
                    out.append(p)
        return out
    deadline = time.monotonic() + 15
    while jobs() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert jobs() == []


def test_cluster_kwargs_keep_dask_config_for_what_is_left_out() -> None:
    pytest.importorskip("dask_jobqueue")
    import dask

    from dptrace.fleet import on_dask
    with dask.config.set({"jobqueue.slurm.processes": 4}):
        assert on_dask.cluster_kwargs("slurm", {"cores": 8, "timeout": 5}) == {"cores": 8}
    assert on_dask.cluster_kwargs("slurm", {"cores": 8, "job-extra-directives": ["-x"],
                                            "adapt": {"maximum": 2}}) == {
        "cores": 8, "processes": 8, "job_extra_directives": ["-x"]}


def test_pbs_job_script_from_a_config_section() -> None:
    pytest.importorskip("dask_jobqueue")
    from dptrace.fleet import on_dask
    cluster = on_dask.jobqueue_cluster("pbs", {
        "queue": "debug", "account": "proj123", "walltime": "01:00:00", "cores": 8,
        "memory": "32GB", "interface": "lo", "job_extra_directives": ["-l filesystems=home"]},
        scheduler_options={"dashboard_address": ":0"})
    try:
        lines = cluster.job_script().splitlines()
    finally:
        cluster.close()
    for line in ("#PBS -q debug", "#PBS -A proj123", "#PBS -l walltime=01:00:00",
                 "#PBS -l filesystems=home"):
        assert line in lines
    assert any("--nthreads 1 --memory-limit" in x and "--nworkers 8 " in x for x in lines)
