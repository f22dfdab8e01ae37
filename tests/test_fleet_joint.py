"""dptrace.fleet.joint: several job folders read by one ``load`` and cut back into each
folder's Dataset give every folder exactly the tables, sources, problems and runs that
``load(FOLDER)`` gives it (columns, dtypes, values, run ids), for every kind of folder of
the fleet fixtures, a folder with two jobs, a folder of several Slurm jobs, a folder no
format reads; folders whose runs would be renamed by the joint load (the same folder name
under two roots) or that a check across the load's inputs ties together (two folders'
PyTorch traces claiming one rank) are not cut out: they are loaded alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from fleet_makers import make_fleet

import dptrace
from dptrace.fleet import joint

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures"
REAL = HERE.parent.parent / "shared" / "realdata"


def _objects(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype(object).where(df.notna(), None)


def _same_as_alone(part: dptrace.Dataset, folder: str) -> None:
    alone = dptrace.load(folder, executor="serial")
    assert part.run_ids == alone.run_ids, folder
    assert part.tables == alone.tables, folder
    for name in [*alone.tables, "sources", "problems", "runs"]:
        a = getattr(alone, name) if name in ("sources", "problems", "runs") else alone[name]
        b = getattr(part, name) if name in ("sources", "problems", "runs") else part[name]
        assert list(a.columns) == list(b.columns), (folder, name)
        assert [str(t) for t in a.dtypes] == [str(t) for t in b.dtypes], (folder, name)
        if "run" in a.columns and isinstance(a["run"].dtype, pd.CategoricalDtype):
            assert list(a["run"].cat.categories) == list(b["run"].cat.categories), (folder, name)
        pd.testing.assert_frame_equal(_objects(a), _objects(b), check_dtype=False,
                                      obj=f"{folder} {name}")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("joint")
    make_fleet.make_fleet(root / "jobs", 2 * len(make_fleet.KINDS))
    two = root / "jobs" / "job-99998-two-jobs"   # a Slurm log and another job's profiles
    two.mkdir()
    shutil.copy(FIX / "trainlog" / "bigscience_hf_ds_gpt2_base_n4_slurm-1832555.out", two)
    for src in sorted((FIX / "straggler" / "delayed_r2").glob("mpi_profile.*")):
        shutil.copy(src, two)
    many = root / "jobs" / "job-99997-slurm-outputs"   # several jobs' Slurm outputs
    many.mkdir()
    for i, name in enumerate(("bigscience_hf_ds_gpt2_n16_bs4.out",
                              "mlprof_ddp_thetagpu_16gpu.log", "alcfws_horovod_tf2_cpu_n8.out")):
        shutil.copy(FIX / "trainlog" / name, many / f"slurm-{4100 + i}.out")
    readme = root / "jobs" / "job-99999-readme"
    readme.mkdir()
    (readme / "README.md").write_text("notes about a job, no logs\n")
    return root


def test_every_kind_of_folder_is_cut_out_as_its_own_load(tree: Path) -> None:
    folders = sorted(str(p) for p in (tree / "jobs").iterdir())
    parts = joint.split(dptrace.load(folders, executor="serial"), folders)
    torch = {f for f in folders if f.endswith("-torchtrace")}
    # the copies of one PyTorch trace pair claim the same ranks at the same times: the
    # load's check across inputs names the other folder's trace, so neither is cut out
    assert set(folders) - set(parts) == torch and len(torch) == 2
    for f in folders:
        if f in parts:
            _same_as_alone(parts[f], f)
    assert len(parts[str(tree / "jobs" / "job-99998-two-jobs")].run_ids) == 2
    assert len(parts[str(tree / "jobs" / "job-99997-slurm-outputs")].run_ids) == 3


def test_a_name_two_roots_share_is_loaded_alone(tree: Path, tmp_path: Path) -> None:
    """The joint load renames the second folder's run (``id#2``); ``load(FOLDER)`` would
    not: both folders are left out, the others cut out as before."""
    src = tree / "jobs" / "job-00002-hf_deepspeed"
    twin = tmp_path / "other" / src.name
    shutil.copytree(src, twin)
    # a folder of two Slurm jobs under another root, one of whose job ids (its run's
    # label, "job 4100") another folder has too (a folder of one job is named by the folder)
    jobs = tmp_path / "other" / "more-slurm"
    jobs.mkdir()
    shutil.copy(tree / "jobs" / "job-99997-slurm-outputs" / "slurm-4100.out", jobs)
    shutil.copy(tree / "jobs" / "job-99997-slurm-outputs" / "slurm-4101.out",
                jobs / "slurm-4200.out")
    folders = [str(src), str(tree / "jobs" / "job-00003-deepspeed"), str(twin),
               str(tree / "jobs" / "job-99997-slurm-outputs"), str(jobs)]
    ds = dptrace.load(folders, executor="serial")
    assert any("#" in r for r in ds.run_ids)
    parts = joint.split(ds, folders)
    assert set(parts) == {str(tree / "jobs" / "job-00003-deepspeed")}
    _same_as_alone(parts[folders[1]], folders[1])


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
def test_real_job_folders_are_cut_out_as_their_own_load() -> None:
    """Real folders of several kinds (mpirun per-rank TensorFlow logs, IBM mpitrace jobs,
    Horovod timelines): each folder the survey finds, cut out of one load of them all."""
    from dptrace.fleet import discover

    roots = [str(REAL / r) for r in ("perrank", "mpitrace/alcfws_theta_knl32",
                                     "mpitrace/mlprof_polaris_run4", "horovod_timeline")]
    folders = discover.job_folders([r for r in roots if Path(r).exists()])
    assert len(folders) >= 4
    parts = joint.split(dptrace.load(folders, executor="serial"), folders)
    assert parts
    for f, part in parts.items():
        _same_as_alone(part, f)
