"""A folder of thousands of runs (issue 32): what is done per run is linear in the runs.

- the labels of the units of one directory (:func:`dptrace.jobs.label`) are read from one
  count of the units per directory (:func:`dptrace.jobs.crowded_homes`), not a comparison
  of every unit with every other: the same labels, a bounded number of path comparisons
  per unit;
- the training logs' facts (world size, ranks printed, torchrun) are taken from the whole
  tables at once: each run's row is what the same rules give on that run's rows alone;
- :meth:`dptrace.Dataset.by_run` groups each table once: each part is :meth:`Dataset.run`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace import jobs, runs
from dptrace.formats.trainlog import facts

FIX = Path(__file__).parent / "fixtures"
BALANCED = FIX / "straggler" / "balanced" / "train.log"


def _unit(home: str, member: int = 0) -> jobs.Unit:
    return jobs.Unit([member], "file", home, home, True)


def _quadratic_crowded(units: list[jobs.Unit]) -> set[str]:
    """The rule as stated: a unit's home is crowded when another unit's home is it or under
    it (every unit against every other)."""
    def under(p: str, root: str) -> bool:
        return os.path.commonpath([p, root]) == root
    return {u.home for u in units
            if any(o is not u and under(o.home, u.home) for o in units)}


def test_crowded_homes_are_the_homes_holding_another_unit() -> None:
    """Nested job folders, two units in one folder, siblings, a prefix that is no parent
    ('/r/a' and '/r/ab'): the walk up finds exactly the homes the pairwise rule finds."""
    homes = ["/r/a", "/r/ab", "/r/b", "/r/b", "/r/c", "/r/c/x", "/r/d/e/f", "/r/d/g",
             "/r", "/s/t"]
    units = [_unit(h) for h in homes]
    crowded = jobs.crowded_homes(units)
    for u in units:
        assert (u.home in crowded) == (u.home in _quadratic_crowded(units)), u.home
    assert {"/r/b", "/r/c", "/r"} <= crowded and "/r/a" not in crowded
    assert "/r/d/e/f" not in crowded and "/r/d" in crowded


def test_labels_of_job_folders_nested_and_shared(tmp_path: Path) -> None:
    """Labels as before: a folder of one job is labelled with its path, a folder holding a
    job and another below it, or two jobs, labels each by its file."""
    for rel in ("a/train.log", "b/x/train.log", "b/train.log", "c/one.log", "c/two.log"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(BALANCED, tmp_path / rel)
    labels = sorted(dptrace.load(str(tmp_path), executor="serial").runs["label"].tolist())
    assert labels == ["a", "b/train.log", "b/x", "c/one.log", "c/two.log"]


def test_labels_compare_paths_a_bounded_number_of_times_per_unit(monkeypatch) -> None:
    """2,000 units of one directory: at most a few path comparisons per unit (the pairwise
    rule made 4 million), and the labels the pairwise rule gives."""
    calls = 0
    commonpath = os.path.commonpath

    def counted(paths):
        nonlocal calls
        calls += 1
        return commonpath(paths)

    root = "/data/runs"
    units = [_unit(f"{root}/job{k:05d}", k) for k in range(2000)]
    units.append(_unit(f"{root}/job00007/sub", 2000))
    paths = [f"{u.home}/train.log" for u in units]
    monkeypatch.setattr(os.path, "commonpath", counted)
    crowded = jobs.crowded_homes(units)
    got = [jobs.label(u, units, root, paths, crowded) for u in units]
    assert calls <= 3 * len(units)
    monkeypatch.setattr(os.path, "commonpath", commonpath)
    assert got[0] == "job00000" and got[-1] == "job00007/sub"
    assert got[7] == "job00007/train.log"       # a job folder holding another job
    assert jobs.label(units[7], units, root, paths) == got[7]   # crowded computed when not given


def _split_rows(tables: dict[str, pd.DataFrame], ids: list[str]) -> runs.Rows:
    return {r: {"run": r, "label": r, "job_id": None, "world_size": None, "nodes": None,
                "launcher": None, "sources": 0, "world_size_from": None} for r in ids}


def _only(df: pd.DataFrame | None, r: str) -> pd.DataFrame | None:
    return None if df is None else df[(df["run"] == r).to_numpy()]


def _facts_whole_and_per_run(ds: dptrace.Dataset) -> tuple[runs.Rows, runs.Rows]:
    metrics = runs.columns(ds["train_metrics"], "name", "pattern", "value", "source",
                           "lineno", "rank", "instance")
    throughput = runs.columns(ds["throughput"], "rank", "instance", "pattern")
    ids = ds.run_ids
    whole = _split_rows({}, ids)
    facts._from_trainlog(whole, metrics, throughput)
    alone = _split_rows({}, ids)
    for r in ids:
        facts._from_trainlog({r: alone[r]}, _only(metrics, r), _only(throughput, r))
    return whole, alone


def test_trainlog_facts_of_many_runs_are_each_runs_own() -> None:
    """Every training log of the fixtures in one load (world sizes stated, a disagreement,
    Horovod benchmarks' device counts, torchrun prefixes, ranks that printed): each run's
    world size, where it came from and launcher, from the whole tables, are what the same
    rules give on the run's own rows."""
    ds = dptrace.load(str(FIX / "trainlog"), executor="serial")
    whole, alone = _facts_whole_and_per_run(ds)
    assert whole == alone
    said = [r["world_size_from"] for r in whole.values() if r["world_size_from"]]
    assert any("disagree" in s for s in said)
    assert any(s.startswith("Horovod benchmark") or "device(s)" in s for s in said)
    assert any(r["launcher"] == "torchrun" for r in whole.values())


def _metrics(rows: list[tuple]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=["run", "name", "pattern", "value", "source", "lineno",
                                     "rank"])
    df["run"] = pd.Categorical(df["run"], categories=sorted(set(df["run"])))
    df["lineno"] = df["lineno"].astype("Int64")
    df["rank"] = df["rank"].astype("Int64")
    return df


def test_trainlog_world_size_rules_per_run_by_hand() -> None:
    """Hand-made rows of three runs: 'a' states 4 twice (rank 1's line 9 and rank 0's line 3:
    line 3 names it) beside values that are no size (inf, 0, 2.5, NaN); 'b' states 2 and 4
    (a disagreement, then a Horovod benchmark's 8 devices do not override it: the
    disagreement leaves world_size empty and the device count fills it); 'c' states none
    and ranks 0-2 printed."""
    inf, nan = float("inf"), float("nan")
    m = _metrics([
        ("a", "world_size", "env_world_size", 4.0, "x/a.log", 9, 1),
        ("a", "world_size", "env_world_size", 4.0, "x/a.log", 3, 0),
        ("a", "world_size", "env_world_size", inf, "x/a.log", 4, 0),
        ("a", "world_size", "env_world_size", 0.0, "x/a.log", 5, 0),
        ("a", "world_size", "env_world_size", 2.5, "x/a.log", 6, 0),
        ("a", "world_size", "env_world_size", nan, "x/a.log", 7, 0),
        ("b", "world_size", "env_world_size", 2.0, "b.log", 1, None),
        ("b", "world_size", "env_world_size", 4.0, "b.log", 2, None),
        ("b", "devices", "horovod_benchmark", 8.0, "b.log", 3, None),
        ("c", "loss", "x", 1.0, "c.log", 1, 0),
        ("c", "loss", "x", 1.0, "c.log", 2, 1),
        ("c", "loss", "x", 1.0, "c.log", 3, 2),
    ])
    rows = _split_rows({}, ["a", "b", "c"])
    facts._from_trainlog(rows, m, None)
    assert rows["a"]["world_size"] == 4 and rows["a"]["world_size_from"].endswith(
        "(a.log line 3)")
    assert rows["b"]["world_size"] == 8
    assert rows["b"]["world_size_from"] == "Horovod benchmark: Total img/sec on 8 device(s)"
    assert rows["c"]["world_size"] == 3 and rows["c"]["world_size_from"] == "ranks 0-2 printed"


@pytest.mark.parametrize("n", [1, 3])
def test_by_run_parts_are_the_runs(tmp_path: Path, n: int) -> None:
    """by_run's parts (one grouping per table) equal run(r) of each run: tables, sources,
    problems, runs, row order and dtypes."""
    for k in range(n):
        (tmp_path / f"job{k}").mkdir()
        shutil.copyfile(BALANCED, tmp_path / f"job{k}" / "train.log")
    (tmp_path / "job0" / "notes.txt").write_text("not a log\n")
    for path in (str(tmp_path), str(FIX / "trainlog" / "generated")):
        ds = dptrace.load(path, executor="serial")
        parts = ds.by_run()
        assert list(parts) == ds.run_ids
        for r, part in parts.items():
            want = ds.run(r)
            assert sorted(part.tables) == sorted(want.tables)
            for name in want.tables:
                pd.testing.assert_frame_equal(part[name], want[name], obj=name)
            for name in ("sources", "problems", "runs"):
                pd.testing.assert_frame_equal(getattr(part, name), getattr(want, name),
                                              obj=name)


def test_files_nothing_read_from_go_with_their_job_folder(tmp_path: Path, monkeypatch) -> None:
    """Job folders each with a README beside the log: each README goes with its folder's
    run, found by a lookup of its directory (no scan of every unit per file: the number of
    home comparisons stays linear)."""
    for k in range(60):
        d = tmp_path / f"job{k:02d}"
        d.mkdir()
        shutil.copyfile(BALANCED, d / "train.log")
        (d / "README.txt").write_text("how this job was run\n")
    seen = 0
    homes_init = jobs._Homes.__init__

    def counted(self, units):
        nonlocal seen
        seen += len(units)
        homes_init(self, units)

    monkeypatch.setattr(jobs._Homes, "__init__", counted)
    ds = dptrace.load(str(tmp_path), executor="serial")
    assert len(ds.runs) == 60 and seen <= 3 * 60
    src = ds.sources
    assert len(src) == 120
    for name, run in zip(src["source"].astype(str), src["run"].astype(str), strict=True):
        assert Path(name).parent.name == run
