"""The loader's seams: one parser contract for every format (a group of sources in, tables
and one outcome per source out) and one executor that the loader owns and hands to the
readers (they start no processes of their own)."""

from __future__ import annotations

import ast
import concurrent.futures
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pandas.testing import assert_frame_equal

import dptrace
from dptrace import executor, loader, registry
from dptrace.sources import expand

HERE = Path(__file__).parent
FIX = HERE / "fixtures"
ROOT = HERE.parent


class Recording:
    """An executor of one's own (what a distributed engine would be): runs here, counts."""

    def __init__(self, workers: int) -> None:
        self.count, self.calls, self.pieces = workers, 0, 0

    @property
    def workers(self) -> int:
        return self.count

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[Any]:
        self.calls += 1
        for item in items:
            self.pieces += 1
            yield fn(item)


def test_resolve_names_the_executors():
    cores = os.cpu_count() or 1
    auto = executor.resolve(None)
    assert auto == executor.resolve("auto")
    assert auto.workers == min(executor.MAX_AUTO_WORKERS, cores) or not executor.can_fork()
    assert executor.resolve("serial") == executor.Serial()
    assert executor.resolve(1) == executor.Serial()
    assert executor.resolve(3) == executor.Processes(3)
    mine = Recording(4)
    assert executor.resolve(mine) is mine
    for bad, err in ((0, ValueError), ("threads", ValueError), (True, TypeError)):
        with pytest.raises(err):
            executor.resolve(bad)


def test_a_large_log_is_split_on_the_executor_given(tmp_path, monkeypatch):
    from dptrace.formats.trainlog import read as trainlog

    log = tmp_path / "slurm-5.out"
    log.write_text("".join(f"{i % 4}: e2e samples_per_sec: {100 + i}.5\n" for i in range(4000)))
    serial = dptrace.load(log, executor="serial")
    monkeypatch.setattr(trainlog, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(trainlog, "RANGE_BYTES", 8 << 10)
    mine = Recording(3)
    split = dptrace.load(log, executor=mine)
    assert mine.calls == 1 and mine.pieces >= 6 and mine.pieces % 3 == 0
    for table in serial.tables:
        assert_frame_equal(serial[table], split[table])


def test_a_large_timeline_is_split_on_the_executor_given(monkeypatch):
    from dptrace.formats import _chrome

    path = FIX / "horovod" / "synthetic_v0201_packed.json"
    serial = dptrace.load(path, executor="serial")
    monkeypatch.setattr(_chrome, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(_chrome, "RANGE_BYTES", 2048)
    mine = Recording(2)
    split = dptrace.load(path, executor=mine)
    assert mine.calls == 1 and mine.pieces >= 8
    for table in serial.tables:
        assert_frame_equal(serial[table], split[table])


def test_serial_loads_start_no_process(tmp_path, monkeypatch):
    from dptrace.formats import _chrome
    from dptrace.formats.trainlog import read as trainlog

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a reader started a process pool")

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", refuse)
    monkeypatch.setattr(executor, "_pool", refuse)
    monkeypatch.setattr(trainlog, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(_chrome, "PARALLEL_BYTES", 1)
    ds = dptrace.load([FIX / "trainlog" / "dschat_step1_opt1.3b_gbs128.log",
                       FIX / "horovod" / "synthetic_v0201_packed.json"], executor="serial")
    assert {"throughput", "hvd_activities"} <= set(ds.tables)


def test_no_reader_imports_a_process_pool():
    """Processes are the executors' business: the loader's (dptrace/executor.py) and the
    fleet's task engines (dptrace/fleet/engines.py), nobody else's."""
    offenders = []
    owners = {ROOT / "dptrace" / "executor.py", ROOT / "dptrace" / "fleet" / "engines.py"}
    for path in sorted((ROOT / "dptrace").rglob("*.py")):
        if path in owners:
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) and node.module else [])
            if any(n.startswith("multiprocessing") or n.endswith("ProcessPoolExecutor")
                   for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


@pytest.mark.parametrize(("fmt", "paths"), [
    ("trainlog", [FIX / "trainlog" / "bigscience_hf_ds_gpt2_n16_bs4.out"]),
    ("mpitrace", sorted((FIX / "mpitrace" / "mlprof_polaris_run4").iterdir())),
    ("horovod", [FIX / "horovod" / "andrewor14_horovod_timeline_2019_4rank.json"]),
    ("sntilestat", [FIX / "sntilestat" / "ug_sn30_single_from_docs.md"]),
])
def test_one_parser_contract_for_every_format(fmt, paths):
    parser = registry.get(fmt)
    sources, _ = expand([str(p) for p in paths])
    problems: list = []
    tables, outcomes = parser.parse_group(sources, problems, executor=executor.Serial())
    assert [o.source for o in outcomes] == sources
    assert sum(o.rows for o in outcomes) == sum(len(df) for df in tables.values())
    ds = dptrace.load([str(p) for p in paths], format=fmt)
    assert ds.sources["rows"].tolist() == [o.rows for o in outcomes]
    assert set(ds.tables) == {k for k, v in tables.items() if len(v)}


def test_a_crashing_batch_reader_costs_its_group_only(tmp_path, monkeypatch):
    from dptrace.formats.mpitrace import read as mpitrace

    def boom(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(mpitrace, "parse_many", boom)
    shutil.copytree(FIX / "mpitrace" / "mlprof_polaris_run4", tmp_path / "job")
    shutil.copy(FIX / "trainlog" / "bigscience_hf_ds_gpt2_n16_bs4.out", tmp_path / "job")
    ds = dptrace.load(tmp_path / "job")
    status = dict(zip(ds.sources["source"].map(lambda s: Path(s).name), ds.sources["status"],
                      strict=True))
    assert status.pop("bigscience_hf_ds_gpt2_n16_bs4.out") == "ok"
    assert set(status.values()) == {"failed"} and len(status) == 8
    crash = ds.problems[ds.problems["message"].str.contains("parser failed: RuntimeError")]
    assert len(crash) == 8
    assert "throughput" in ds.tables


_REAL = Path(__file__).resolve().parent.parent.parent / "shared" / "realdata"


@pytest.mark.skipif(not executor.can_fork(), reason="needs fork")
@pytest.mark.parametrize("name", [
    "scaling/mlperf2.0_azure_nd96amsr_ssd_n2_16gpu_ncclinfo.txt",   # trainlog+nccl+mllog
    "trainlog/megatron_ds_gpt3_125M_8gpu.log"])                       # trainlog+nccl
def test_companions_of_a_large_file_read_beside_it_give_the_same_dataset(
        tmp_path, monkeypatch, name):
    """The companion formats of a large plain file (its NCCL lines, its MLPerf lines) are
    read in another process while the first format reads it; the dataset is the one read
    one format after another, and when that process dies the companion is read here."""
    path = _REAL / name
    if not path.exists():
        pytest.skip(f"{name} is not in realdata")
    one = dptrace.load(path, executor="serial")
    monkeypatch.setattr(loader, "OVERLAP_BYTES", 1)
    pids = tmp_path / "pids"
    monkeypatch.setattr(loader, "_parse_alone", _alone)   # (picklable: the pool sends it)
    monkeypatch.setitem(_ALONE, "pids", pids)
    both = dptrace.load(path, executor=2)
    ran = [line.split() for line in pids.read_text().splitlines()]
    assert ran and all(int(pid) != os.getpid() for pid, _ in ran)
    assert {fmt for _, fmt in ran} == set(one.sources["format"].iloc[0].split("+")[1:])
    monkeypatch.setattr(loader, "_parse_alone", _killed)
    again = dptrace.load(path, executor=2)
    for ds in (both, again):
        for table in one.tables:
            assert_frame_equal(one[table], ds[table])
        assert_frame_equal(one.sources.drop(columns="seconds", errors="ignore"),
                           ds.sources.drop(columns="seconds", errors="ignore"))
        assert_frame_equal(one.problems, ds.problems)
        assert_frame_equal(one.runs, ds.runs)



#: what the companion wrappers below need (set before the load: the process is forked), and
#: the loader's own function (module level: the pool pickles what it runs)
_ALONE: dict[str, Any] = {}
_REAL_ALONE = loader._parse_alone


def _alone(job: Any) -> Any:
    with open(_ALONE["pids"], "a") as fh:
        fh.write(f"{os.getpid()} {job[0].name}\n")
    return _REAL_ALONE(job)


def _killed(job: Any) -> Any:
    os._exit(3)
