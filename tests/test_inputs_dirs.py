"""Directories hold other files (issue 11): READMEs, parameters, empty files are listed once as
skipped, not failures; mpitrace's translated call stacks are read, not taken for new jobs; an
empty directory says so; files of formats dptrace does not read yet are named."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import dptrace
from dptrace.cli import main
from dptrace.reports import html

HERE = Path(__file__).resolve().parent
LOG = HERE.parent / "examples" / "data" / "bigscience_hf_ds_gpt2_n16_bs4.out"
CALLSTACKS = HERE / "fixtures" / "mpitrace" / "ibm_mpitrace_callstack_4rank"
REAL = HERE.parent.parent / "shared" / "realdata"
needs_real = pytest.mark.skipif(not REAL.is_dir(), reason="shared/realdata is not beside the clone")

#: what sits beside the logs in a real run directory
OTHERS = {
    "README.md": b"# Run 7\n\nGPT-2 on 16 nodes; see params.json.\n",
    "params.json": b'{"lr": 0.1, "global_batch_size": 64}',      # json.dump: no final newline
    "ground_truth.txt": b"expected loss after 100 steps: 3.2\n",
    "empty.out": b"",
}


def _run_dir(tmp_path: Path, names: dict[str, bytes] = OTHERS) -> Path:
    run = tmp_path / "run7"
    run.mkdir()
    shutil.copy(LOG, run / LOG.name)
    for name, data in names.items():
        (run / name).write_bytes(data)
    return run


def _report(args: list[str], tmp_path: Path) -> tuple[int, dict]:
    out = tmp_path / "report.json"
    code = main(["report", *args, "--json", str(out), "--width", "120"])
    return code, json.loads(out.read_text())


def test_other_files_in_a_directory_are_skipped_not_failures(tmp_path, capsys):
    run = _run_dir(tmp_path)
    code, report = _report([str(run)], tmp_path)
    assert code == 0 and report["exit_code"] == 0
    status = {Path(r["source"]).name: r["status"]
              for r in report["sections"]["inputs"]["tables"]["sources"]}
    assert status == {LOG.name: "ok", **{n: "skipped" for n in OTHERS}}
    problems = report["sections"]["problems"]["tables"]["problems"]
    # one info row per file, and nothing else about them (no "job killed" for params.json)
    assert sorted(Path(p["source"]).name for p in problems) == sorted(OTHERS)
    assert {p["severity"] for p in problems} == {"info"}
    assert not any("newline" in p["message"] or "killed" in p["message"] for p in problems)
    empty = next(p for p in problems if p["source"].endswith("empty.out"))
    assert empty["message"] == "skipped: empty file"
    ds = dptrace.load(run)
    assert not ds.skipped and len(ds["throughput"]) > 0
    assert "skipped" in capsys.readouterr().out     # the terminal lists them too
    # the same files named on their own are errors, as before
    code, report = _report([str(run / LOG.name), str(run / "README.md")], tmp_path)
    assert code == 1
    readme = [r for r in report["sections"]["inputs"]["tables"]["sources"]
              if r["source"].endswith("README.md")]
    assert readme[0]["status"] == "empty"
    assert main(["report", str(run / LOG.name), str(run / "empty.out")]) == 1
    ds = dptrace.load([run / LOG.name, run / "empty.out"])
    assert ds.sources["status"].tolist() == ["ok", "unknown"]
    assert ds.problems["severity"].tolist() == ["error"]


def test_a_glob_is_like_a_directory_and_naming_a_file_too_makes_it_explicit(tmp_path):
    run = _run_dir(tmp_path)
    ds = dptrace.load(str(run / "*"))
    assert not ds.skipped and (ds.sources["status"] == "skipped").sum() == len(OTHERS)
    both = dptrace.load([run, run / "README.md"])
    readme = both.sources[both.sources["source"].str.endswith("README.md")]
    assert readme["status"].tolist() == ["empty"] and both.skipped


def test_html_header_sums_the_skipped_files_up_in_one_line(tmp_path):
    hostile = "<img src=x onerror=alert(1)>.md"
    run = _run_dir(tmp_path, {**OTHERS, hostile: b"notes\n", "a.txt": b"x\n", "b.txt": b"y\n"})
    page = dptrace.report(dptrace.load(run)).to_html()
    header = page[page.index("<header>"):page.index("</header>")]
    m = re.search(r"<details class='skipped'><summary>(.*?)</summary>(.*?)</details>", header,
                  re.S)
    assert m, header
    assert m[1] == ("7 files not recognised (&lt;img src=x onerror=alert(1)&gt;.md, README.md, "
                    "a.txt, b.txt, ...)")
    items = re.findall(r"<li>(.*?)</li>", m[2])
    assert len(items) == 7 and header.count("<details") == 1
    assert "<img" not in header and "&lt;img src=x onerror=alert(1)&gt;.md: " in m[2]
    assert "class='bad'" not in header                     # nothing failed
    assert "8 file(s): 7 not recognised, 1 trainlog" in header
    assert "problem(s)" not in header                      # info rows are not problems


def test_html_header_still_lists_failures_in_red(tmp_path):
    run = _run_dir(tmp_path)
    ds = dptrace.load([run, run / "README.md"])
    text = html._not_parsed(ds.sources, ds.problems)
    assert text.count("class='bad'") == 1 and "README.md</span> (empty" in text
    assert "4 files not recognised" not in text and "3 files not recognised" in text


def test_translated_call_stacks_beside_their_profiles_make_no_fake_job(tmp_path):
    ds = dptrace.load(CALLSTACKS)
    # no "unparseable line" errors: the only rows are the script and program that made them
    assert ds.problems["severity"].tolist() == ["info", "info"], ds.problems
    status = dict(zip(ds.sources["source"].map(lambda s: Path(s).name), ds.sources["status"],
                      strict=True))
    assert status.pop("make_fixture.sh") == status.pop("dp_allreduce.c") == "skipped"
    assert set(status.values()) == {"ok"} and len(status) == 8
    for table in ("mpi_routines", "mpi_messages", "mpi_ranks", "mpi_jobs", "mpi_call_stacks"):
        assert set(ds[table]["job"].astype(str)) == {"4242"}, table
    assert sorted(ds["mpi_ranks"]["rank"].dropna().unique()) == [0, 1, 2, 3]
    assert not ds["mpi_routines"].duplicated(["job", "rank", "routine"]).any()
    stacks = ds["mpi_call_stacks"]
    assert not stacks.duplicated(["job", "rank", "stack", "routine"]).any()
    assert stacks["source"].str.endswith(".translated.txt").all()   # the names' file
    assert stacks["function"].notna().all()
    # the variant says what the copy is
    copy = ds.sources[ds.sources["source"].str.endswith("mpi_profile.4242.0.translated.txt")]
    assert copy["variant"].item() == "call-stack translation of mpi_profile.4242.0 (translate.py)"
    assert main(["report", str(CALLSTACKS), "--json", str(tmp_path / "r.json")]) == 0


def test_a_translated_profile_alone_stands_for_its_profile(tmp_path):
    for name in ("mpi_profile.4242.2.translated.txt", "mpi_profile.4242.3.translated.txt"):
        shutil.copy(CALLSTACKS / name, tmp_path / name)
    alone = dptrace.load(tmp_path)
    assert alone.problems.empty
    assert set(alone["mpi_routines"]["job"].astype(str)) == {"4242"}
    both = dptrace.load([CALLSTACKS / "mpi_profile.4242.2", CALLSTACKS / "mpi_profile.4242.3"])
    cols = ["rank", "routine", "calls", "avg_bytes", "time_s"]
    assert alone["mpi_routines"][cols].equals(both["mpi_routines"][cols])


def test_an_empty_directory_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    ds = dptrace.load(tmp_path / "empty")
    assert ds.problems["message"].tolist() == ["directory has no files"]
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / ".nfs0001").write_text("x\n")
    ds = dptrace.load(tmp_path / "hidden")
    assert ds.problems["message"].item().startswith("directory has no files (only hidden")
    assert main(["report", str(tmp_path / "empty")]) == 3
    assert "no such file" in dptrace.load(tmp_path / "nope").problems["message"].item()


@needs_real
@pytest.mark.parametrize(("path", "looks_like"), [
    ("torch_trace/alcfws_aurora_xpu_ddp_key_averages_rank0.txt",
     "a PyTorch profiler table (key_averages)"),
])
def test_formats_not_read_yet_are_named(path, looks_like, tmp_path):
    want = f"looks like {looks_like}, which dptrace does not read yet"
    ds = dptrace.load(REAL / path)                       # named on its own: an error
    assert ds.sources["status"].item() == "unknown"
    assert ds.sources["message"].item() == want
    assert ds.problems[["severity", "message"]].values.tolist() == [["error", f"skipped: {want}"]]
    run = tmp_path / "run"                               # in a directory: skipped
    run.mkdir()
    shutil.copy(REAL / path, run / Path(path).name)
    shutil.copy(LOG, run / LOG.name)
    ds = dptrace.load(run)
    assert not ds.skipped
    assert ds.problems[["severity", "message"]].values.tolist() == [["info", f"skipped: {want}"]]


@needs_real
def test_only_files_that_nothing_parses_are_called_unread_formats():
    # training logs full of NCCL INFO lines, and a doc with several tools' output, beside a
    # profiler table that nothing parses
    parsed = [REAL / "trainlog" / "megatron_ds_gpt3_125M_8gpu.log",
              REAL / "trainlog" / "andrewor14_tf_keras_rank0_stderr.log",
              REAL / "mpitrace" / "mlprof_README_from_docs.md"]
    table = REAL / "torch_trace" / "alcfws_aurora_xpu_ddp_key_averages_rank0.txt"
    ds = dptrace.load([*parsed, table])
    assert ds.sources["status"].tolist() == ["ok", "ok", "ok", "unknown"], ds.sources
    said = ds.problems[ds.problems["message"].str.contains("does not read yet")]
    assert said["source"].tolist() == [str(table)]
    # a forced format keeps its own answer
    trace = HERE / "fixtures" / "horovod" / "hta_sampled_rank-1_ws128.json.gz"
    forced = dptrace.load(trace, format="horovod")
    assert forced.sources["status"].item() == "failed"
    assert "not a Horovod timeline" in forced.problems["message"].item()
