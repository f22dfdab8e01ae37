"""dptrace survey (issue 33 items 1, 2, 4) on a fleet copied from the real fixtures
(tests/fixtures/fleet/make_fleet.py): each run's row agrees with `dptrace report` of its
folder and with what its files state; the cache reads back identically with pandas,
pyarrow.dataset and DuckDB; a second survey parses nothing; a parser version change
reparses only that format's folders; a failing or slow folder is a row, never the
survey's failure; an interrupted batch leaves the cache valid."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from fleet_makers import make_fleet

import dptrace
from dptrace.fleet import cache as fcache
from dptrace.fleet import command, summary, survey, versions, work

HERE = Path(__file__).resolve().parent

#: one folder of every kind, and delayed_r2 a second time (the repeat offender needs two)
KINDS = (*make_fleet.KINDS, "mpitrace_straggler")


@pytest.fixture(scope="module")
def fleet_tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    root = tmp_path_factory.mktemp("fleet")
    folders = make_fleet.make_fleet(root / "jobs", len(KINDS), KINDS)
    # a job folder no format reads (its tables are all empty: sources and problems only)
    empty = root / "jobs" / "job-99999-readme"
    empty.mkdir()
    (empty / "README.md").write_text("notes about a job, no logs\n")
    folders[str(empty)] = "readme"
    # a job folder with two jobs (a Slurm log and another job's MPI profiles): two runs
    two = root / "jobs" / "job-99998-two-jobs"
    two.mkdir()
    fixtures = HERE / "fixtures"
    shutil.copy(fixtures / "trainlog" / "bigscience_hf_ds_gpt2_base_n4_slurm-1832555.out", two)
    for src in sorted((fixtures / "straggler" / "delayed_r2").glob("mpi_profile.*")):
        shutil.copy(src, two)
    folders[str(two)] = "two_jobs"
    cache = root / "cache"
    first = survey(root / "jobs", cache=cache, engine="serial")
    return {"root": root / "jobs", "folders": folders, "cache": cache, "first": first}


def _row(fleet: pd.DataFrame, kind_folder: str) -> pd.DataFrame:
    return fleet[fleet["path"] == kind_folder]


def _same(a: object, b: object) -> bool:
    """Equal, or both missing."""
    if pd.isna(a) and pd.isna(b):  # type: ignore[call-overload]
        return True
    return bool(a == b)


def _folders_of(tree: dict[str, object], kind: str) -> list[str]:
    return [f for f, k in tree["folders"].items() if k == kind]  # type: ignore[union-attr]


def test_every_folder_is_a_row_and_run_keys_are_unique(fleet_tree: dict[str, object]) -> None:
    f = fleet_tree["first"].fleet  # type: ignore[attr-defined]
    assert set(f["path"]) == set(fleet_tree["folders"])  # type: ignore[arg-type]
    assert f["run_key"].is_unique
    assert len(f) == len(fleet_tree["folders"]) + 1  # type: ignore[arg-type]  (two jobs)
    assert fleet_tree["first"].stats["parsed"] == len(fleet_tree["folders"])  # type: ignore


def test_rows_agree_with_dptrace_report_of_each_folder(fleet_tree: dict[str, object]) -> None:
    """Job figure, world size, findings by severity, stragglers: the report's own."""
    f = fleet_tree["first"].fleet  # type: ignore[attr-defined]
    for folder in fleet_tree["folders"]:  # type: ignore[attr-defined]
        _agrees_with_report(f, folder)


REAL = HERE.parent.parent / "shared" / "realdata"
#: real folders of several kinds: mpirun per-rank TensorFlow logs (4 and 18 ranks), IBM
#: mpitrace jobs of Theta and Polaris (profiles naming their hosts), Horovod timelines
REAL_ROOTS = ("perrank", "mpitrace/alcfws_theta_knl32", "mpitrace/mlprof_polaris_run4",
              "horovod_timeline")


@pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")
def test_rows_agree_with_dptrace_report_on_real_folders(tmp_path: Path) -> None:
    roots = [str(REAL / r) for r in REAL_ROOTS]
    fl = survey(roots, cache=tmp_path / "c", engine="serial")
    assert set(fl.fleet["status"]) <= {"ok", "partial"}
    for folder in dict.fromkeys(fl.fleet["path"]):
        _agrees_with_report(fl.fleet, folder)
    # the straggler's host is the one its profile names: Theta job 19013, rank 0 on
    # nid00102 (mpi_profile.19013.0 line 76: '0  nid00102  251.33  317.92 ...': its MPI
    # time 251 s of 318 s, the least of the 32 ranks, the compute straggler)
    knl = fl.fleet[fl.fleet["path"] == str(REAL / "mpitrace" / "alcfws_theta_knl32")].iloc[0]
    assert (knl["world_size"], knl["straggler_ranks"], knl["straggler_hosts"]) == (
        32, "0", "nid00102")
    ranks = fl.ranks[fl.ranks["run_key"] == knl["run_key"]]
    assert len(ranks) == 32 and ranks.loc[ranks["straggler"], "host"].tolist() == ["nid00102"]
    # the mpirun per-rank TensorFlow jobs ran NCCL over sockets ('NET/Socket' in each
    # rank's stderr): both are named as on a fallback network
    fb = summary.fallback_runs(fl.fleet, fl.findings)
    assert sorted(fb["run"]) == ["tflogs_mpirun_outfile_18rank_hetero_d4a",
                                 "tflogs_mpirun_outfile_4rank_j8"]


def _agrees_with_report(f: pd.DataFrame, folder: str) -> None:
    ds = dptrace.load(folder)
    rep = dptrace.report(ds)
    job = rep.tables.get("throughput.job")
    found = rep.tables["findings.findings"]
    mine = _row(f, folder)
    assert sorted(mine["run"]) == sorted(ds.run_ids), folder
    for run in ds.run_ids:
        row = mine[mine["run"] == run].iloc[0]
        runs = ds.runs[ds.runs["run"] == run].iloc[0]
        assert _same(row["world_size"], runs["world_size"]), (folder, run)
        assert _same(row["nodes"], runs["nodes"]), (folder, run)
        jr = None if job is None else job[job["run"].astype(object) == run]
        if jr is None or not len(jr):
            assert pd.isna(row["value"]), (folder, run)
        else:
            assert row["metric"] == jr["metric"].iloc[0]
            assert row["value"] == pytest.approx(float(jr["value"].iloc[0]))
        fr = found[found["run"].astype(object) == run]
        for sev in ("critical", "warning", "info"):
            assert row[f"findings_{sev}"] == (fr["severity"].astype(object) == sev).sum()
        strag = fr[fr["kind"].astype(object).str.contains("straggler|waiting_rank")
                   & fr["rank"].notna()]
        expect = ",".join(str(int(r)) for r in sorted(set(strag["rank"]))) or None
        assert (row["straggler_ranks"] if pd.notna(row["straggler_ranks"]) else None) \
            == expect, (folder, run)


def test_what_the_files_state(fleet_tree: dict[str, object]) -> None:
    """Checked by hand against the inputs: delayed_r2's train.log line 28 'Total img/sec on
    4 CPU(s): 1506.8', its profiles 'Data for MPI rank 2 of 4' and rank 2 with the least
    MPI time (0.605 s vs 0.936/1.069/0.896 s: the others waited for it), on the host the
    fleet maker put it on; the socket log's 'via NET/Socket' channels; the libfabric log's
    'NET/AWS Libfabric/3/GDRDMA' channels."""
    f = fleet_tree["first"].fleet  # type: ignore[attr-defined]
    for folder in _folders_of(fleet_tree, "mpitrace_straggler"):
        row = _row(f, folder).iloc[0]
        assert (row["world_size"], row["metric"], row["value"]) == (4, "images_per_s", 1506.8)
        assert row["per_gpu"] == pytest.approx(1506.8 / 4)
        assert row["straggler_ranks"] == "2"
        assert row["straggler_hosts"] == make_fleet.BAD_HOST
        assert row["formats"] == "mpitrace,trainlog"
    balanced = _row(f, _folders_of(fleet_tree, "mpitrace_balanced")[0]).iloc[0]
    assert balanced["value"] == 2317.0 and pd.isna(balanced["straggler_ranks"])
    sock = _row(f, _folders_of(fleet_tree, "nccl_socket")[0]).iloc[0]
    assert sock["nccl_socket"] and "NET/Socket" in sock["nccl_network"]
    gdr = _row(f, _folders_of(fleet_tree, "nccl_gdr")[0]).iloc[0]
    assert not gdr["nccl_socket"] and gdr["gdr"] and "Libfabric" in gdr["nccl_network"]
    readme = _row(f, _folders_of(fleet_tree, "readme")[0]).iloc[0]
    assert readme["status"] == "failed" and pd.isna(readme["value"])
    two = _row(f, _folders_of(fleet_tree, "two_jobs")[0]).set_index("run")
    assert sorted(two.index) == ["job 1832555", "job 5001"]
    assert two.loc["job 5001", "world_size"] == 4 and two.loc["job 1832555", "job_id"] == "1832555"


def test_summary_names_the_repeat_offender_and_the_fallback(fleet_tree: dict[str, object]) -> None:
    fl = fleet_tree["first"]
    hosts = summary.repeat_hosts(fl.ranks)  # type: ignore[attr-defined]
    assert hosts["host"].tolist() == [make_fleet.BAD_HOST]
    assert hosts["straggler_runs"].tolist() == [2]
    fb = summary.fallback_runs(fl.fleet, fl.findings)  # type: ignore[attr-defined]
    assert fb["path"].tolist() == _folders_of(fleet_tree, "nccl_socket")
    ranks = fl.ranks  # type: ignore[attr-defined]
    bad = ranks[ranks["host"] == make_fleet.BAD_HOST]
    assert bad["rank"].tolist() == [2, 2] and bad["straggler"].all()


def test_second_survey_parses_nothing_and_gives_the_same_tables(
        fleet_tree: dict[str, object]) -> None:
    first = fleet_tree["first"]
    again = survey(fleet_tree["root"], cache=fleet_tree["cache"], engine="serial")
    assert again.stats["parsed"] == 0 and again.stats["analysed"] == 0
    assert again.stats["cached"] == len(fleet_tree["folders"])  # type: ignore[arg-type]
    assert set(again.fleet["cache"]) == {"hit"}
    cols = [c for c in first.fleet.columns if c != "cache"]  # type: ignore[attr-defined]
    pd.testing.assert_frame_equal(again.fleet[cols], first.fleet[cols])  # type: ignore
    pd.testing.assert_frame_equal(again.findings, first.findings)  # type: ignore
    pd.testing.assert_frame_equal(again.ranks, first.ranks)  # type: ignore


def _cache_files(cache: Path) -> dict[str, Path]:
    return {f"{part}/{d.name}": d for part in ("tables", "derived")
            for d in sorted((cache / part).iterdir())}


def test_cache_reads_back_identically_with_pandas_pyarrow_and_duckdb(
        fleet_tree: dict[str, object]) -> None:
    import duckdb
    import pyarrow.dataset as pads

    cache = Path(fleet_tree["cache"])  # type: ignore[arg-type]
    tables = _cache_files(cache)
    assert {"tables/sources", "tables/runs", "derived/fleet", "derived/job_figures"} <= set(
        tables)
    assert "tables/mpi_jobs" in tables or any(k.startswith("tables/mpi") for k in tables)
    for name, d in tables.items():
        files = sorted(d.glob("*.parquet"))
        assert files, name
        by_pandas = pd.read_parquet(d)
        by_arrow = pads.dataset(d, format="parquet").to_table().to_pandas()
        by_duck = duckdb.sql(f"SELECT * FROM read_parquet('{d}/*.parquet')").df()
        ours = pd.concat([fcache.read_file(f) for f in files], ignore_index=True)
        assert len(by_pandas) == len(by_arrow) == len(by_duck) == len(ours), name
        assert list(by_pandas.columns) == list(by_arrow.columns) == list(by_duck.columns), name
        key = ["run_key", *[c for c in by_pandas.columns if c != "run_key"][:3]]
        for other in (by_arrow, by_duck, ours):
            _equal_values(by_pandas, other[list(by_pandas.columns)], key, name)


def _equal_values(a: pd.DataFrame, b: pd.DataFrame, key: list[str], name: str) -> None:
    """Same rows and values whatever dtypes each reader gives (categoricals, strings,
    nullable ints as objects; NaN, None and NA as one missing value)."""
    def plain(df: pd.DataFrame) -> list[tuple[object, ...]]:
        rows = df.astype(object).where(df.notna(), None).itertuples(index=False, name=None)
        return sorted((tuple(_norm(v) for v in r) for r in rows), key=repr)

    assert plain(a) == plain(b), name


def _norm(v: object) -> object:
    if isinstance(v, pd.Timestamp):
        return v.tz_localize(None).value if v.tzinfo else v.value
    if hasattr(v, "item"):
        v = v.item()  # numpy scalars
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, bool):
        return int(v)
    return v


def test_fleet_dataset_is_the_load_of_the_folder(fleet_tree: dict[str, object]) -> None:
    """Fleet.dataset gives the tables load gives (without parsing), and the same report."""
    fl = fleet_tree["first"]
    for folder in fleet_tree["folders"]:  # type: ignore[attr-defined]
        keys = fl.fleet.loc[fl.fleet["path"] == folder, "run_key"].tolist()  # type: ignore
        cached = fl.dataset(keys)  # type: ignore[attr-defined]
        loaded = dptrace.load(folder)
        assert cached.run_ids == loaded.run_ids, folder
        assert sorted(cached.tables) == sorted(loaded.tables), folder
        for name in [*loaded.tables, "sources", "problems", "runs"]:
            a = loaded[name] if name not in ("sources", "problems", "runs") else getattr(
                loaded, name)
            b = cached[name] if name not in ("sources", "problems", "runs") else getattr(
                cached, name)
            assert list(a.columns) == list(b.columns), (folder, name)
            assert [str(t) for t in a.dtypes] == [str(t) for t in b.dtypes], (folder, name)
            pd.testing.assert_frame_equal(_objects(a), _objects(b), check_dtype=False,
                                          obj=f"{folder} {name}")
        fa = dptrace.findings(loaded)
        fb = dptrace.findings(cached)
        assert fa["message"].tolist() == fb["message"].tolist(), folder


def _objects(df: pd.DataFrame) -> pd.DataFrame:
    return df.astype(object).where(df.notna(), None)


def test_fleet_dataset_feeds_compare(fleet_tree: dict[str, object]) -> None:
    """Two runs of the cache compared without parsing: the straggler copy against the
    balanced run (1506.8 against 2317.0 img/sec, the files' own 'Total img/sec')."""
    fl = fleet_tree["first"]
    f = fl.fleet  # type: ignore[attr-defined]
    base = f[f["path"] == _folders_of(fleet_tree, "mpitrace_balanced")[0]]["run_key"].iloc[0]
    cand = f[f["path"] == _folders_of(fleet_tree, "mpitrace_straggler")[0]]["run_key"].iloc[0]
    rep = dptrace.compare(fl.dataset([base]), fl.dataset([cand]))  # type: ignore[attr-defined]
    kinds = set(rep.tables["findings.findings"]["kind"].astype(object))
    assert "throughput_change" in kinds


def test_slow_runs_against_their_history() -> None:
    """Per-GPU figures of one job kind (metric, world size, formats): 100, 98, 102 and 60;
    the 60 is 60% of the median 99 and listed; another kind of two runs is never judged."""
    fleet = pd.DataFrame({
        "run_key": [f"k{i}/r" for i in range(6)], "run": list("abcdef"),
        "path": list("ABCDEF"), "metric": ["images_per_s"] * 4 + ["tokens_per_s"] * 2,
        "world_size": [8] * 4 + [4] * 2, "formats": ["trainlog"] * 6,
        "per_gpu": [100.0, 98.0, 102.0, 60.0, 10.0, 1.0]})
    slow = summary.slow_runs(fleet)
    assert slow["run"].tolist() == ["d"]
    assert slow["history_median"].iloc[0] == 99.0
    assert slow["share"].iloc[0] == pytest.approx(60 / 99)


def test_parser_version_bump_reparses_only_that_format(
        fleet_tree: dict[str, object], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(Path(fleet_tree["cache"]), cache)  # type: ignore[arg-type]
    real = versions.parser_version
    monkeypatch.setattr(versions, "parser_version",
                        lambda fmt: "bumped" if fmt == "torchtrace" else real(fmt))
    again = survey(fleet_tree["root"], cache=cache, engine="serial")
    torch = _folders_of(fleet_tree, "torchtrace")
    assert again.stats["parsed"] == len(torch)
    assert again.stats["cached"] == len(fleet_tree["folders"]) - len(torch)  # type: ignore
    parsed = again.fleet[again.fleet["cache"] == "parsed"]
    assert parsed["path"].tolist() == torch


def test_analysis_version_bump_analyses_again_without_parsing(
        fleet_tree: dict[str, object], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    shutil.copytree(Path(fleet_tree["cache"]), cache)  # type: ignore[arg-type]
    monkeypatch.setattr(versions, "analysis_version", lambda: "new analysis")
    folders = _folders_of(fleet_tree, "mpitrace_straggler")
    again = survey(folders, cache=cache, engine="serial")
    assert again.stats["analysed"] == len(folders) and again.stats["parsed"] == 0
    assert set(again.fleet["straggler_hosts"]) == {make_fleet.BAD_HOST}


def test_a_failing_or_slow_folder_is_a_row(fleet_tree: dict[str, object],
                                           monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Path) -> None:
    folders = _folders_of(fleet_tree, "mpitrace_straggler") + _folders_of(fleet_tree,
                                                                          "megatron")
    real = work._load

    def load(folder: str, s: work.Settings) -> object:
        if folder == folders[0]:
            raise RuntimeError("disk on fire")
        if folder == folders[1]:
            time.sleep(60)
        return real(folder, s)

    monkeypatch.setattr(work, "_load", load)
    fl = survey(folders, cache=tmp_path / "c", engine="serial", timeout=8.0)
    by = fl.fleet.set_index("path")
    assert by.loc[folders[0], "status"] == "error"
    assert "disk on fire" in by.loc[folders[0], "error"]
    assert by.loc[folders[1], "status"] == "timeout"
    assert by.loc[folders[2], "status"] == "ok" and by.loc[folders[2], "value"] > 0
    assert fl.stats["failed"] == 2
    assert command.exit_code(fl) == 1
    monkeypatch.setattr(work, "_load", real)
    again = survey(folders, cache=tmp_path / "c", engine="serial")
    assert (again.stats["parsed"], again.stats["cached"]) == (2, 1)   # failures tried again
    assert set(again.fleet["status"]) == {"ok"}


def test_interrupted_batch_leaves_a_valid_cache_and_a_rerun_resumes(
        fleet_tree: dict[str, object], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    folders = _folders_of(fleet_tree, "nccl_gdr") + _folders_of(fleet_tree, "deepspeed")
    cache = tmp_path / "c"
    real = fcache._write_json
    calls = {"n": 0}

    def interrupted(path: Path, data: dict[str, object]) -> None:
        if path.parent.name == "batches":
            calls["n"] += 1
            if calls["n"] == 2:   # the second batch: its tables are written, not its manifest
                raise KeyboardInterrupt
        real(path, data)

    monkeypatch.setattr(fcache, "_write_json", interrupted)
    with pytest.raises(KeyboardInterrupt):
        survey(folders, cache=cache, engine="serial", batch=1)
    monkeypatch.setattr(fcache, "_write_json", real)
    c = fcache.Cache(cache)
    assert [e.folder for e in c.entries().values()] == folders[:1]
    assert c.info()["unreferenced_batches"] == 1
    again = survey(folders, cache=cache, engine="serial", batch=1)
    assert (again.stats["cached"], again.stats["parsed"]) == (1, 1)
    done = c.compact()
    assert done["folders"] == 2 and done["files_removed"] > 0
    assert c.info()["unreferenced_batches"] == 0
    after = survey(folders, cache=cache, engine="serial")
    assert after.stats["cached"] == 2
    pd.testing.assert_frame_equal(after.fleet.drop(columns="cache"),
                                  again.fleet.drop(columns="cache"))


def test_derived_batches_merged_for_the_next_warm_survey(
        fleet_tree: dict[str, object], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """A survey whose folders' derived rows lie in many batches writes them as one (a warm
    survey then reads one file per fleet table); the parsed tables stay; the next survey
    takes everything from the cache and gives the same tables."""
    from dptrace.fleet import api

    monkeypatch.setattr(api, "MERGE_DERIVED", 2)
    folders = [*_folders_of(fleet_tree, "mpitrace_straggler"),
               *_folders_of(fleet_tree, "torchtrace"), *_folders_of(fleet_tree, "readme")]
    cache = tmp_path / "c"
    first = survey(folders, cache=cache, engine="serial", batch=1)
    for name in ("fleet", "fleet_findings", "fleet_ranks"):
        assert len(list((cache / "derived" / name).glob("*.parquet"))) == 1, name
    assert len(list((cache / "tables" / "sources").glob("*.parquet"))) == len(folders)
    again = survey(folders, cache=cache, engine="serial")
    assert again.stats["cached"] == len(folders)
    pd.testing.assert_frame_equal(first.fleet.drop(columns="cache"),
                                  again.fleet.drop(columns="cache"))
    pd.testing.assert_frame_equal(first.findings, again.findings)
    pd.testing.assert_frame_equal(first.job_figures, again.job_figures)
    assert fcache.Cache(cache).info()["unreferenced_batches"] == 0


def test_processes_engine_gives_the_same_fleet(fleet_tree: dict[str, object],
                                               tmp_path: Path) -> None:
    folders = [*_folders_of(fleet_tree, "mpitrace_straggler"),
               *_folders_of(fleet_tree, "torchrun")]
    serial = survey(folders, cache=tmp_path / "a", engine="serial", batch=1)
    procs = survey(folders, cache=tmp_path / "b", engine="processes", workers=2, batch=1)
    drop = ["parse_s", "analysis_s"]
    pd.testing.assert_frame_equal(serial.fleet.drop(columns=drop),
                                  procs.fleet.drop(columns=drop))
    pd.testing.assert_frame_equal(serial.ranks, procs.ranks)


def test_command_survey_json_out_and_cache_commands(fleet_tree: dict[str, object],
                                                    tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    folders = _folders_of(fleet_tree, "mpitrace_straggler")
    manifest = tmp_path / "jobs.txt"
    manifest.write_text("# two jobs\n" + "\n".join(folders) + "\n")
    parser = command.build_parser()
    out = tmp_path / "fleet.parquet"
    code = command.run(parser.parse_args(["survey", "--manifest", str(manifest), "--cache",
                                          str(tmp_path / "c"), "--json", "-", "--out",
                                          str(out), "--engine", "serial"]))
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["path"] for r in data["fleet"]] == folders
    assert data["summary"]["repeat_offender_hosts"][0]["host"] == make_fleet.BAD_HOST
    assert pd.read_parquet(out)["run_key"].tolist() == [r["run_key"] for r in data["fleet"]]
    assert (tmp_path / "fleet-findings.parquet").is_file()
    assert command.run(parser.parse_args(["cache", "info", str(tmp_path / "c"),
                                          "--json"])) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["folders"] == 2 and info["runs"] == 2
    assert command.run(parser.parse_args(["cache", "clear", str(tmp_path / "c")])) == 0
    assert fcache.Cache(tmp_path / "c").entries() == {}
    assert command.run(parser.parse_args(["survey", str(tmp_path / "nowhere")])) == 2
    assert command.run(parser.parse_args(["cache", "info", str(tmp_path)])) == 2


def test_since_skips_old_folders(fleet_tree: dict[str, object], tmp_path: Path) -> None:
    old = _folders_of(fleet_tree, "megatron")[0]
    new = tmp_path / "jobs" / "new"
    shutil.copytree(old, new)
    stamp = time.time() - 10 * 86400
    for p in Path(old).rglob("*"):
        os.utime(p, (stamp, stamp))
    from dptrace.fleet import discover

    since = pd.Timestamp.now(tz="UTC") - pd.Timedelta(days=1)
    assert discover.job_folders([old, str(new)], since=since.to_pydatetime()) == [str(new)]


def test_job_folders_rule(tmp_path: Path) -> None:
    from dptrace.fleet import discover

    (tmp_path / "a" / "x").mkdir(parents=True)
    (tmp_path / "a" / "x" / "slurm-1.out").write_text("x")
    (tmp_path / "a" / "x" / "sub").mkdir()
    (tmp_path / "a" / "x" / "sub" / "t.json").write_text("x")
    for r in (0, 1):
        d = tmp_path / "b" / "torch" / "attempt_0" / str(r)
        d.mkdir(parents=True)
        (d / "stdout.log").write_text("x")
    for r in (0, 1):
        d = tmp_path / "b" / "mpi" / "1" / f"rank.{r}"
        d.mkdir(parents=True)
        (d / "stdout").write_text("x")
    (tmp_path / "b" / ".hidden").mkdir()
    (tmp_path / "b" / ".hidden" / "f").write_text("x")
    found = discover.job_folders([str(tmp_path)])
    assert found == [str(tmp_path / "a" / "x"), str(tmp_path / "b" / "mpi"),
                     str(tmp_path / "b" / "torch")]
    assert discover.job_folders([str(tmp_path / "a" / "x")]) == [str(tmp_path / "a" / "x")]


def test_sampled_hash_of_a_huge_file_sees_a_change(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from dptrace.fleet import discover

    monkeypatch.setattr(discover, "WHOLE_BYTES", 1 << 16)
    monkeypatch.setattr(discover, "BLOCK", 1 << 10)
    p = tmp_path / "big.log"
    data = bytearray(b"x" * (1 << 20))
    p.write_bytes(bytes(data))
    a = discover.content_hash(str(p), len(data))
    data[-1:] = b"y"
    p.write_bytes(bytes(data))
    assert discover.content_hash(str(p), len(data)) != a


def test_parser_versions_follow_imports() -> None:
    """A format's parser version covers its read modules and the core they import, not
    its report side; the analysis version covers the findings."""
    mods = versions.closure([*versions._parse_roots("mpitrace")[0], *versions.CORE])
    assert "dptrace.formats.mpitrace.read" in mods and "dptrace.loader" in mods
    assert "dptrace.formats.mpitrace.sections" not in mods
    assert not any(m.startswith("dptrace.reports") for m in mods)
    assert not any(m.startswith("dptrace.formats.nccl.") for m in mods)
    assert "dptrace.findings" in versions.closure(versions.ANALYSIS)
    assert versions.parser_version("mpitrace") != versions.parser_version("nccl")


def test_a_task_of_many_folders_gives_each_folder_its_rows_alone(
        fleet_tree: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A task analyses its folders through one analysis context (work.run_task): every
    folder's fleet rows, findings, ranks and job figures are those a survey in tasks of one
    folder gives it, timings aside. A folder whose run id another folder of the task has
    (the same folder name under another root) is analysed apart and gets the same rows as
    its original but for its path and run key."""
    from dptrace.fleet import api

    # now, not the fixture's survey: other tests change the tree's mtimes (file times)
    first = survey(fleet_tree["root"], cache=tmp_path / "alone", engine="serial", batch=1)
    orig = list(first.fleet["path"].drop_duplicates())
    twin = tmp_path / "other" / Path(orig[0]).name
    shutil.copytree(orig[0], twin)
    monkeypatch.setattr(api, "MIN_TASKS", 1)   # one task of every folder
    fl = survey([str(fleet_tree["root"]), str(tmp_path / "other")], cache=tmp_path / "c",
                engine="serial", batch=64)
    assert fl.stats["parsed"] == len(orig) + 1 and fl.stats["failed"] == 0
    assert len(list((tmp_path / "c" / "batches").glob("*.json"))) == 1
    timing = ["parse_s", "analysis_s"]
    for name in ("fleet", "findings", "ranks", "job_figures"):
        want = getattr(first, name)
        got = getattr(fl, name)
        got_orig = got[~got["run_key"].astype(object).isin(
            fl.fleet.loc[fl.fleet["path"] == str(twin), "run_key"])]
        a = want.drop(columns=[c for c in timing if c in want.columns])
        b = got_orig.drop(columns=[c for c in timing if c in got_orig.columns])
        pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True),
                                      check_categorical=False)
    row = fl.fleet[fl.fleet["path"] == str(twin)].drop(columns=[*timing, "path", "run_key"])
    want_row = first.fleet[first.fleet["path"] == orig[0]].drop(
        columns=[*timing, "path", "run_key"])
    assert len(row) == 1
    pd.testing.assert_frame_equal(row.reset_index(drop=True), want_row.reset_index(drop=True),
                                  check_categorical=False)
