"""Small runs (issue 32): ``dptrace report`` of one small log, and of a folder of 1, 10,
100 and 1,000 copies of it, each copy its own job, against ``python -c "import pandas,
pyarrow, rich"`` in the same run.

    python benchmarks/bench_small_runs.py [--log PATH] [--runs 1,10,100,1000] [--repeat 3]
        [--before DIR]

``--before DIR``: also time the dptrace package in DIR (a copy of the tree before a change,
``DIR/dptrace``) in the same rounds, its rows named ``before ...`` (folders up to
``--before-max`` runs).

Each copy is ``slurm-<job id>.out`` in one folder (distinct job ids: each its own job, so
its own run). Measured, each in a fresh interpreter interleaved round by round with the
reference (so they see the same machine load), best of ``--repeat`` (the largest folder
once unless ``--repeat-large``):

- ``report``: ``dptrace report FOLDER`` (the terminal report, to a file): wall and CPU time
  (user + system of the process);
- ``analysis``: ``dptrace.report(ds)`` after ``dptrace.load``, in the process, timed alone
  (wall and CPU), the first call (what the command pays: modules imported on first use
  included); ``load`` beside it.

Children run with bytecode written and read (``PYTHONDONTWRITEBYTECODE`` dropped from their
environment: an installed package has its ``.pyc``), after one untimed report of the log.

Targets (issue 32): one small log's report at most 1.6x the reference; 1,000 runs at most
15x one run's report.

``--fleet N`` (issue 33: the cost of a small run in a survey): instead, ``N`` folders of the
small fleet (scripts/make_small_fleet.py: real fixtures' job folders of every kind), each
in one warm process (one folder of each kind read first, untimed): per folder, the CPU of
``dptrace.load``, of the analysis (the context's derived tables a survey reads) and of the
findings, by kind and in all, against ``pandas.read_csv`` of the same files (each line one
text field) in the same process: the reference. ``--survey``: also a serial cold ``dptrace
survey`` of the N folders (a fresh interpreter, imports excluded). With ``--before DIR``
both trees, alternated ``--repeat`` times; the best of each is kept.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LOG = ROOT / "tests" / "fixtures" / "straggler" / "balanced" / "train.log"
REFERENCE = [sys.executable, "-c", "import pandas, pyarrow, rich"]
ANALYSIS = r"""
import json, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import dptrace
ds = dptrace.load(sys.argv[1])
t1, c1 = time.perf_counter(), time.process_time()
report = dptrace.report(ds)
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"load_wall": t1 - t0, "load_cpu": c1 - c0, "wall": t2 - t1, "cpu": c2 - c1,
                  "runs": len(ds.run_ids)}))
"""


def timed(cmd: list[str], out: str | None = None, tree: Path | None = None,
          ) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stdout when ``out`` is None); ``tree``: the
    directory whose ``dptrace`` package the child imports (PYTHONPATH)."""
    env = dict(os.environ)
    # bytecode written and used, as an installed package has it: with
    # PYTHONDONTWRITEBYTECODE in the caller's environment every changed module of the tree
    # would be compiled from source in every run (~0.1-0.2 s of a small report)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cwd = ROOT
    if tree is not None:   # (its directory first: ``-c`` and ``-m`` put the cwd first)
        env["PYTHONPATH"] = str(tree)
        cwd = tree
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    if out is None:
        res = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             check=True, cwd=cwd, text=True, env=env)
        text = res.stdout
    else:
        with open(out, "w") as fh:
            subprocess.run(cmd, stdout=fh, stderr=subprocess.DEVNULL, check=False, cwd=cwd,
                           env=env)
        text = ""
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, text


def make_folder(log: Path, n: int, base: Path) -> Path:
    """``n`` copies of ``log`` in one folder, each ``slurm-<job id>.out``: n jobs."""
    folder = base / f"runs_{n}"
    folder.mkdir()
    for i in range(n):
        shutil.copyfile(log, folder / f"slurm-{700000 + i}.out")
    return folder


#: the child of ``--fleet``: per folder, CPU of read_csv (the reference), load, analysis,
#: findings; one JSON line of sums by kind
FLEET = r"""
import glob, importlib, json, os, sys, time
import pandas as pd
import dptrace
from dptrace.analyses import Analyses
findings = importlib.import_module("dptrace.findings")
folders = sorted(glob.glob(os.path.join(sys.argv[1], "job-*")))
TABLES = ("throughput.job", "communication.jobs", "nccl.overview", "throughput.instances",
          "communication.ranks", "torchtrace.ranks")

def files(folder):
    return sorted(p for p in glob.glob(os.path.join(folder, "**"), recursive=True)
                  if os.path.isfile(p))

def one(folder):
    c0 = time.process_time()
    for path in files(folder):   # each line one text field: the bytes read into a frame
        try:
            pd.read_csv(path, sep="\x1f", header=None, quoting=3, dtype=str,
                        on_bad_lines="skip", encoding_errors="replace", engine="c")
        except pd.errors.EmptyDataError:   # (an empty file)
            pass
    c1 = time.process_time()
    ds = dptrace.load(folder, executor="serial")
    c2 = time.process_time()
    a = Analyses(ds, {"warmup": 0.1, "thresholds": {}, "view": "report"})
    for name in TABLES:
        a.get(name)
    c3 = time.process_time()
    findings.build(a)
    c4 = time.process_time()
    return [c1 - c0, c2 - c1, c3 - c2, c4 - c3, len(ds.run_ids)]

kind = lambda f: os.path.basename(f).split("-", 2)[2]
seen = set()
for f in folders:   # untimed: one of each kind (modules imported, caches warm)
    if kind(f) not in seen:
        seen.add(kind(f))
        one(f)
out = {}
for f in folders:
    got = one(f)
    row = out.setdefault(kind(f), [0] * 6)
    row[0] += 1
    for k, v in enumerate(got):
        row[k + 1] += v
print(json.dumps(out))
"""
#: the child of ``--survey``: a serial cold survey's CPU, imports excluded
SURVEY = r"""
import json, sys, time
from dptrace.fleet import survey
c0 = time.process_time()
f = survey(sys.argv[1], cache=sys.argv[2], engine="serial")
print(json.dumps({"cpu": time.process_time() - c0, "runs": len(f.fleet)}))
"""
FLEET_COLS = ("reference", "load", "analysis", "findings")


def fleet(a: argparse.Namespace) -> None:
    """``--fleet N``: see the module's docstring."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_small_fleet import make_small_fleet

    trees: list[tuple[str, Path | None]] = [("", None)]
    if a.before is not None:
        trees.insert(0, ("before", a.before.resolve()))
    res: dict[str, object] = {"folders": a.fleet, "load_average": os.getloadavg()[0]}
    best: dict[str, dict[str, list[float]]] = {}
    surveys: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="dptrace-small-fleet-") as tmp:
        jobs = Path(tmp) / "jobs"
        make_small_fleet(jobs, a.fleet)
        for rnd in range(a.repeat):
            for tag, tree in trees:
                _, _, text = timed([sys.executable, "-c", FLEET, str(jobs)], None, tree)
                got = json.loads(text.strip().splitlines()[-1])
                mine = best.setdefault(tag or "now", {})
                for kind, row in got.items():   # the best round of each kind
                    if kind not in mine or sum(row[2:5]) < sum(mine[kind][2:5]):
                        mine[kind] = row
                if a.survey:
                    cache = Path(tmp) / f"cache-{rnd}-{tag or 'now'}"
                    _, _, text = timed([sys.executable, "-c", SURVEY, str(jobs), str(cache)],
                                       None, tree)
                    surveys.setdefault(tag or "now", []).append(
                        json.loads(text.strip().splitlines()[-1])["cpu"])
    res["load_average_end"] = os.getloadavg()[0]
    table: dict[str, dict[str, object]] = {}
    for tag, kinds in best.items():
        rows: dict[str, object] = {}
        total = [0.0] * 7
        for kind, row in sorted(kinds.items()):
            n = row[0]
            rows[kind] = {"folders": n, **{f"{c}_ms": round(1e3 * row[k + 1] / n, 1)
                                            for k, c in enumerate(FLEET_COLS)}}
            total = [t + v for t, v in zip(total, row, strict=False)]
        n = total[0]
        rows["all"] = {"folders": int(n), "runs": int(total[5]),
                       **{f"{c}_ms": round(1e3 * total[k + 1] / n, 1)
                          for k, c in enumerate(FLEET_COLS)},
                       "x_reference": round(sum(total[2:5]) / total[1], 2)}
        if tag in surveys:
            rows["survey_cpu_s"] = round(min(surveys[tag]), 2)
        table[tag] = rows
    res["results"] = table
    print(json.dumps(res, indent=2))
    for tag, rows in table.items():
        r = rows["all"]
        assert isinstance(r, dict)
        print(f"{tag:>6}: per folder {r['load_ms']} ms load, {r['analysis_ms']} ms analysis, "
              f"{r['findings_ms']} ms findings ({r['x_reference']}x read_csv's "
              f"{r['reference_ms']} ms)"
              + (f"; serial cold survey {rows['survey_cpu_s']} CPU-s" if "survey_cpu_s" in rows
                 else ""))
    if a.json:
        a.json.write_text(json.dumps(res, indent=2))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--log", type=Path, default=DEFAULT_LOG)
    p.add_argument("--runs", default="1,10,100,1000")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--repeat-large", type=int, default=1,
                   help="repeats of folders of 100 runs and more")
    p.add_argument("--json", type=Path, help="write the numbers here too")
    p.add_argument("--before", type=Path, help="a tree whose dptrace to time as well")
    p.add_argument("--before-max", type=int, default=100,
                   help="the largest folder timed with --before (a slow tree's 1,000 runs "
                        "can take many minutes)")
    p.add_argument("--fleet", type=int, default=0,
                   help="time N folders of the small fleet instead (issue 33)")
    p.add_argument("--survey", action="store_true",
                   help="with --fleet: also a serial cold survey of the folders")
    a = p.parse_args()
    if a.fleet:
        fleet(a)
        return
    sizes = [int(x) for x in a.runs.split(",") if x]
    dptrace = [sys.executable, "-m", "dptrace.cli", "report"]
    res: dict[str, object] = {"log": str(a.log), "log_bytes": a.log.stat().st_size,
                              "load_average": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory(prefix="dptrace-small-runs-") as tmp:
        base = Path(tmp)
        out = str(base / "report.txt")
        targets = {"log": str(a.log)} | {f"{n} runs": str(make_folder(a.log, n, base))
                                         for n in sizes}
        best: dict[str, dict[str, float]] = {}
        trees: list[tuple[str, Path | None]] = [("", None)]
        if a.before is not None:
            trees.insert(0, ("before ", a.before.resolve()))

        def keep(name: str, **vals: float) -> None:
            old = best.setdefault(name, {})
            for k, v in vals.items():
                old[k] = min(old.get(k, v), v)

        for _tag, tree in trees:   # untimed: bytecode written, files in the page cache
            timed([*dptrace, targets["log"]], out, tree)
        for rnd in range(a.repeat):
            keep("reference", wall=(r := timed(REFERENCE))[0], cpu=r[1])
            for name, path in targets.items():
                n = 1 if name == "log" else int(name.split()[0])
                if n >= 100 and rnd >= a.repeat_large:
                    continue
                for tag, tree in trees:
                    if tag and n > a.before_max:
                        continue
                    wall, cpu, _ = timed([*dptrace, path], out, tree)
                    keep(f"{tag}report {name}", wall=wall, cpu=cpu)
                    _, _, text = timed([sys.executable, "-c", ANALYSIS, path], None, tree)
                    got = json.loads(text.strip().splitlines()[-1])
                    keep(f"{tag}analysis {name}", wall=got["wall"], cpu=got["cpu"],
                         load_wall=got["load_wall"], load_cpu=got["load_cpu"],
                         runs=got["runs"])
    ref = best["reference"]
    rows = {}
    for name, v in best.items():
        row = {k: round(x, 4) for k, x in v.items()}
        tag = "before " if name.startswith("before ") else ""
        one = best.get(f"{tag}report 1 runs", best[f"{tag}report log"])
        if name.removeprefix("before ").startswith("report"):
            row["x_reference_wall"] = round(v["wall"] / ref["wall"], 2)
            row["x_reference_cpu"] = round(v["cpu"] / ref["cpu"], 2)
            row["x_one_run_wall"] = round(v["wall"] / one["wall"], 2)
        rows[name] = row
    res["results"] = rows
    print(json.dumps(res, indent=2))
    for name, r in rows.items():
        extra = (f" = {r['x_reference_wall']:.2f}x reference wall, {r['x_reference_cpu']:.2f}x "
                 f"CPU, {r['x_one_run_wall']:.1f}x one run" if "x_reference_wall" in r else
                 (f" (load {r['load_wall']:.3f} s)" if "load_wall" in r else ""))
        print(f"{name:>29}: {r['wall']:.3f} s wall, {r['cpu']:.3f} s CPU{extra}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
