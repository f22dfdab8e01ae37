"""The findings only a live job has, on real logs replayed by the writer process
(tests/watch_writer.py): a rank that stopped printing, NCCL's socket fallback as soon as its
line is read, a throughput drop against the run's own steady state and against a baseline;
and the faces (``--jsonl``, ``--html``, a line per refresh) through the command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dptrace
from dptrace.watch import command
from dptrace.watch.run import Watch

ROOT = Path(__file__).parent
REALDATA = ROOT.parent.parent / "shared" / "realdata"
WRITER = ROOT / "watch_writer.py"
PERRANK = REALDATA / "perrank" / "tflogs_mpirun_outfile_4rank_j8"
SOCKET_LOG = ROOT / "fixtures" / "nccl" / "tflogs_4rank_j8_rank.0_stderr.log"
DRIFT = ROOT / "fixtures" / "trainlog" / "generated" / "drift"


def writer(pairs, *, seed: int, rate: float, max_piece: int, extra=()) -> subprocess.Popen:
    args = [sys.executable, str(WRITER), "--seed", str(seed), "--rate", str(rate),
            "--max-piece", str(max_piece), *extra]
    for src, dst in pairs:
        args += [str(src), str(dst)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, text=True)


@pytest.mark.skipif(not PERRANK.is_dir(), reason="no per-rank logs")
def test_a_rank_that_stops_printing_is_reported_within_two_intervals_of_the_threshold(
        tmp_path: Path) -> None:
    watched = tmp_path / "job"
    files = sorted(PERRANK.rglob("stderr"))
    pairs = [(p, watched / p.relative_to(PERRANK)) for p in files]
    stop = pairs[2][1]
    interval = 0.25
    # the setup output (60 KB) at once, then the training lines (3.5 KB, 21 rows per
    # rank, one every 160 bytes) at ~120 bytes/s per rank (a row every ~1.3 s, for ~30 s);
    # rank 2 stops after ~5 rows, the others print for ~20 s more
    proc = writer(pairs, seed=11, rate=4 * 120.0, max_piece=120,
                  extra=("--stop", f"{stop}:61300", "--head", "60400"))
    w = Watch([str(watched)], interval=interval, idle_exit=2.0, cpu_share=1.0)
    w.live.stopped_factor = 4.0
    found: dict[str, float] = {}
    usual: dict[str, float] = {}
    #: a rank flagged while its file had training rows still to come (a false alarm)
    early: list[str] = []
    last_row = {str(dst): _last_row_end(src) for src, dst in pairs}
    times = []
    for snap in w.snapshots():
        times.append(snap.time)
        size = {f["file"]: f["size_bytes"] for f in snap.files}
        for f in snap.findings:
            if f["kind"] == "live_stopped_printing" and f["subject"] not in found:
                found[f["subject"]] = snap.time
                usual[f["subject"]] = f["threshold"]
                early += [f["subject"] for path, end in last_row.items()
                          if path in f["subject"] and "rank.2" not in path
                          and size.get(path, 0) < end]
    out, _ = proc.communicate(timeout=120)
    stopped_at = float(re.search(r"STOPPED (\S+)", out).group(1))
    mine = [k for k in found if "rank.2" in k]
    assert mine, found
    # refreshes come every interval, or later on a loaded machine (a snapshot's wall time):
    # within two refreshes after the threshold (its silence is judged from the first
    # refresh without new rows)
    refresh = max(interval, *(b - a for a, b in zip(times, times[1:], strict=False)))
    limit = stopped_at + w.live.stopped_factor * usual[mine[0]] + 2 * refresh
    assert found[mine[0]] <= limit, (found[mine[0]] - stopped_at, usual[mine[0]])
    # the others printed their rows to the end: none is called stopped before its last row
    # (after it, a rank that prints only its closing lines while another still trains is
    # one that stopped printing rows)
    assert not early, (early, found)


def _last_row_end(path: Path) -> int:
    """The byte offset after the line of a log's last training row."""
    ds = dptrace.load(str(path))
    last = max(int(ds[t]["lineno"].max()) for t in ("throughput", "train_metrics")
               if t in ds.tables and len(ds[t]))
    data = path.read_bytes()
    at = 0
    for _ in range(last):
        at = data.index(b"\n", at) + 1
    return at


@pytest.mark.skipif(not SOCKET_LOG.is_file(), reason="no socket-fallback log")
def test_socket_fallback_is_found_in_the_first_snapshot_that_read_its_line(
        tmp_path: Path) -> None:
    data = SOCKET_LOG.read_bytes()
    line_end = data.index(b"\n", data.index(b"NET/Socket : Using")) + 1
    assert dptrace.findings(str(SOCKET_LOG))["kind"].eq("nccl_socket_fallback").any()
    dst = tmp_path / SOCKET_LOG.name
    proc = writer([(SOCKET_LOG, dst)], seed=5, rate=len(data) / 4.0, max_piece=2500)
    w = Watch([str(dst)], interval=0.2, idle_exit=1.5, cpu_share=1.0)
    first_with_line = first_with_finding = None
    for k, snap in enumerate(w.snapshots()):
        has = any(f["kind"] == "nccl_socket_fallback" for f in snap.findings)
        if first_with_line is None and snap.files and snap.files[0]["read_bytes"] >= line_end:
            first_with_line = k
        if first_with_finding is None and has:
            first_with_finding = k
        if has:
            assert snap.files[0]["read_bytes"] >= line_end   # never before the line
    proc.wait(timeout=60)
    assert first_with_line is not None and first_with_finding == first_with_line


def _drop_kinds(snaps) -> set[str]:
    return {f["kind"] for s in snaps for f in s.findings if f["kind"].startswith("live_")}


@pytest.mark.skipif(not DRIFT.is_dir(), reason="no drift fixture")
def test_throughput_drop_against_the_runs_own_steady_state(tmp_path: Path) -> None:
    """drift.log's tqdm rate falls from ~17.4 to ~11.9 it/s (its own drift finding says
    31.8%) on one line of redraws, read live up to its last redraw: the figures printed over
    the last refreshes fall below the run's steady state; steady.log never shows one."""
    got = {}
    for name in ("drift.log", "steady.log"):
        src = DRIFT / name
        dst = tmp_path / name
        proc = writer([(src, dst)], seed=3, rate=src.stat().st_size / 6.0, max_piece=300)
        w = Watch([str(dst)], interval=0.15, idle_exit=1.2, cpu_share=1.0)
        snaps = list(w.snapshots())
        proc.wait(timeout=60)
        got[name] = snaps
    drops = [f for s in got["drift.log"] for f in s.findings
             if f["kind"] == "live_throughput_drop"]
    assert drops
    # the recent figures are those of the slowing part (down to ~11.9 it/s), at least 20%
    # below the reference, the steady figures before them (from ~17.4)
    assert all(11 < f["value"] < 14.5 and 14 < f["threshold"] < 18.5
               and f["value"] < 0.8 * f["threshold"] for f in drops), drops
    assert "live_throughput_drop" not in _drop_kinds(got["steady.log"])


@pytest.mark.skipif(not DRIFT.is_dir(), reason="no drift fixture")
def test_below_baseline(tmp_path: Path) -> None:
    """steady.log runs at 18.5 it/s, drift.log at 14.4 (78%): drift against steady's saved
    Dataset is below the baseline; steady against drift is not."""
    saved = tmp_path / "steady_saved"
    dptrace.load(str(DRIFT / "steady.log")).save(saved)
    w = Watch([str(DRIFT / "drift.log")], interval=0.05, idle_exit=0.0, baseline=str(saved))
    snaps = list(w.snapshots())
    below = [f for f in snaps[-1].findings if f["kind"] == "live_below_baseline"]
    assert below and below[0]["value"] == pytest.approx(14.4067, rel=1e-3)
    assert below[0]["threshold"] == pytest.approx(18.5076, rel=1e-3)
    w = Watch([str(DRIFT / "steady.log")], interval=0.05, idle_exit=0.0,
              baseline=str(DRIFT / "drift.log"))
    assert "live_below_baseline" not in _drop_kinds(list(w.snapshots()))


MEGATRON = REALDATA / "trainlog" / "megatron_ds_gpt3_125M_8gpu.log"


@pytest.mark.skipif(not MEGATRON.is_file(), reason="no megatron log")
def test_command_writes_jsonl_html_and_the_final_report(tmp_path: Path, capsys) -> None:
    jsonl, html = tmp_path / "w.jsonl", tmp_path / "w.html"
    args = command.build_parser().parse_args(
        [str(MEGATRON), "--interval", "0.1", "--idle-exit", "0.3", "--jsonl", str(jsonl),
         "--html", str(html)])
    code = command.run(args)
    out = capsys.readouterr().out
    assert code == dptrace.report(dptrace.load(str(MEGATRON))).exit_code
    objs = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert objs[-1]["final"] and all(not o["final"] for o in objs[:-1])
    job = {j["metric"]: j["value"] for j in objs[-1]["job"]}
    # the file's own lines: 'elapsed time per iteration' of 8 ranks -> 423.55 samples/s
    assert job["samples_per_s"] == pytest.approx(423.5505, rel=1e-6)
    assert objs[-1]["files"][0]["read_bytes"] == MEGATRON.stat().st_size
    assert html.read_text().startswith("<!DOCTYPE html>")
    assert not list(tmp_path.glob("w.html.tmp*"))
    assert "samples_per_s 423.6" in out          # a line per refresh (not a terminal)
    assert "Throughput" in out                    # the final report


def test_command_jsonl_to_stdout_is_only_json(tmp_path: Path, capsys) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(MEGATRON.read_bytes() if MEGATRON.is_file() else b"")
    code = command.run(command.build_parser().parse_args(
        [str(log), "--interval", "0.1", "--idle-exit", "0.2", "--jsonl", "-"]))
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(json.loads(line)["time"] > 0 for line in lines)
    assert code in (0, 1)


def test_missing_input_and_bad_interval_are_usage_or_empty(tmp_path: Path, capsys) -> None:
    assert command.run(command.build_parser().parse_args(
        [str(tmp_path), "--interval", "0"])) == 2
    start = time.monotonic()
    code = command.run(command.build_parser().parse_args(
        [str(tmp_path / "none.log"), "--interval", "0.05", "--idle-exit", "0.1",
         "--no-report"]))
    assert time.monotonic() - start < 30
    assert code != 0   # nothing to read: the ordinary report's exit code for that


def _fake_squeue(tmp_path: Path, monkeypatch, state: str) -> None:
    """A ``squeue`` on PATH that lists job 4242 as ``state`` ("" : no longer queued)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "squeue"
    script.write_text(f"#!/bin/sh\nprintf '%s' '{state}'\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


def test_the_watch_ends_when_the_slurm_job_left_the_queue(tmp_path: Path, monkeypatch) -> None:
    from dptrace.watch import run as watch_run

    log = tmp_path / "slurm-4242.out"     # the job id from the file name, as sbatch names it
    log.write_bytes(MEGATRON.read_bytes() if MEGATRON.is_file() else b"x\n")
    _fake_squeue(tmp_path, monkeypatch, "RUNNING\n")
    assert not watch_run.slurm_gone("4242")
    _fake_squeue(tmp_path, monkeypatch, "")
    assert watch_run.slurm_gone("4242")
    w = Watch([str(log)], interval=0.05)          # no --idle-exit: only the queue ends it
    snaps = list(w.snapshots())
    assert w.ended == "Slurm job 4242 left the queue" and snaps[-1].final
