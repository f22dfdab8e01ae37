"""A survey task reads its folders with one ``load`` and analyses them through one analysis
context (dptrace/fleet/work.py, joint.together); its fleet tables must be those of each
folder loaded and analysed alone (``Settings(joint=False)``, what ``dptrace report
FOLDER`` does), to the value: every derived table the fleet rows read is per run and the
findings judge each run on its own (docs/fleet.md, "One analysis for many folders"). Checked
on the fleet fixtures' kinds (two-job folders, a folder of several Slurm jobs, a folder
nothing reads, folders the joint load cannot cut out), on a cycle of the 1,000-run test's
small fleet (every kind it has) and on the real folders of shared/realdata; the cached
tables and the cache's entries are the same too."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fleet_makers import assert_same_tables, make_fleet, make_small_fleet

import dptrace.api
from dptrace import formats
from dptrace.fleet import api as fapi
from dptrace.fleet import versions, work
from dptrace.fleet.cache import Cache, Entry

HERE = Path(__file__).resolve().parent
FIX = HERE / "fixtures"
REAL = HERE.parent.parent / "shared" / "realdata"


def _task(folders: Sequence[str], where: Path, joint: bool) -> dict[str, Any]:
    """One task of ``folders`` into the cache ``where``: its fleet tables, entries, cached
    Datasets, and how many loads it made."""
    settings = work.Settings(str(where), versions.parser_versions(formats.names()),
                             versions.core_version(), versions.analysis_version(), joint=joint)
    loads = []
    real = dptrace.api.load

    def counted(*args: Any, **kwargs: Any) -> Any:
        loads.append(args[0])
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(dptrace.api, "load", counted)
        done = work.run_task(work.Task(tuple((f, None) for f in folders), settings))
    entries = [Entry.of(e) for e in done.entries]
    store = Cache(str(where))
    return {"tables": fapi._read_derived(store, entries), "entries": entries,
            "datasets": store.datasets(entries), "loads": len(loads),
            "outcomes": done.outcomes}


def _objects(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype(object).where(df.notna(), None)


def _same(folders: Sequence[str], tmp: Path, what: str) -> dict[str, Any]:
    """The joint task's tables, entries and cache equal the per-folder task's."""
    joint = _task(folders, tmp / "joint", True)
    alone = _task(folders, tmp / "alone", False)
    assert alone["loads"] == len(folders)
    assert joint["outcomes"] == alone["outcomes"] == ["parsed"] * len(folders), what
    assert_same_tables(joint["tables"], alone["tables"], what)
    for a, b in zip(joint["entries"], alone["entries"], strict=True):
        assert (a.folder, a.key, a.formats, a.tables, a.runs, a.status) == \
            (b.folder, b.key, b.formats, b.tables, b.runs, b.status), a.folder
    assert set(joint["datasets"]) == set(alone["datasets"])
    for folder, x in joint["datasets"].items():
        y = alone["datasets"][folder]
        assert x.run_ids == y.run_ids and x.tables == y.tables, folder
        for name in [*y.tables, "sources", "problems", "runs"]:
            a = getattr(x, name) if name in ("sources", "problems", "runs") else x[name]
            b = getattr(y, name) if name in ("sources", "problems", "runs") else y[name]
            assert [str(t) for t in a.dtypes] == [str(t) for t in b.dtypes], (folder, name)
            pd.testing.assert_frame_equal(_objects(a), _objects(b), check_dtype=False,
                                          obj=f"{folder} {name}")
    return joint


def test_fixture_kinds_joint_equals_alone(tmp_path: Path) -> None:
    # every kind once, and a second PyTorch trace pair (the joint load cannot cut out
    # either: one claims the other's ranks)
    kinds = (*make_fleet.KINDS, "torchtrace")
    made = make_fleet.make_fleet(tmp_path / "jobs", len(kinds), kinds)
    twos = []
    for name in ("job-99998-two-jobs", "job-99996-two-jobs"):   # a Slurm log and another
        two = tmp_path / "jobs" / name                           # job's profiles, twice: the
        two.mkdir()                                              # same job ids (not cut out)
        shutil.copy(FIX / "trainlog" / "bigscience_hf_ds_gpt2_base_n4_slurm-1832555.out", two)
        for src in sorted((FIX / "straggler" / "delayed_r2").glob("mpi_profile.*")):
            shutil.copy(src, two)
        twos.append(str(two))
    many = tmp_path / "jobs" / "job-99997-slurm-outputs"   # several jobs' Slurm outputs
    many.mkdir()
    for i, name in enumerate(("bigscience_hf_ds_gpt2_n16_bs4.out",
                              "mlprof_ddp_thetagpu_16gpu.log", "alcfws_horovod_tf2_cpu_n8.out")):
        shutil.copy(FIX / "trainlog" / name, many / f"slurm-{4100 + i}.out")
    readme = tmp_path / "jobs" / "job-99999-readme"
    readme.mkdir()
    (readme / "README.md").write_text("notes about a job, no logs\n")
    folders = [*made, *twos, str(many), str(readme)]
    joint = _same(folders, tmp_path, "fixture kinds")
    # one joint load; the two copies of a PyTorch trace pair and the two two-job folders
    # alone (analysed in groups of distinct run ids)
    assert joint["loads"] == 1 + 2 + 2
    fleet = joint["tables"]["fleet"]
    assert len(fleet) == len(folders) + 2 + 2   # two jobs, twice; three Slurm outputs
    assert (fleet["findings_warning"] + fleet["findings_critical"]).sum() > 0


@pytest.mark.slow
def test_a_cycle_of_the_small_fleet_joint_equals_alone(tmp_path: Path) -> None:
    made = make_small_fleet.make_small_fleet(tmp_path / "jobs", 100)
    assert {k for k, _ in made.values()} == set(make_small_fleet.KINDS)
    joint = _same(list(made), tmp_path, "small fleet")
    assert joint["loads"] <= 3   # the joint load, and the two two-job folders alone
    strag = joint["tables"]["fleet"]
    assert set(strag["straggler_hosts"].dropna()) == {
        h for _, h in made.values() if h}


@pytest.mark.slow
@pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
def test_real_folders_joint_equals_alone(tmp_path: Path) -> None:
    folders = sorted(str(p) for top in REAL.iterdir() if top.is_dir()
                     for p in ([top] if not any(c.is_dir() for c in top.iterdir())
                               else [c for c in top.iterdir() if c.is_dir()]))
    assert len(folders) >= 10
    _same(folders, tmp_path, "realdata")
