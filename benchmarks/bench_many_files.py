"""Thousands of small files (issue 32): ``load`` and ``dptrace report`` of N copies of a
real small training log, each its own job folder (or loose files), against one file.

    python benchmarks/bench_many_files.py [--counts 1,100,1000] [--big] [--layout jobs]
                                          [--log PATH] [--no-report] [--report-max N]
                                          [--json out.json]

Writes N copies of ``--log`` (default: the 1.3 KB Horovod benchmark log of
tests/fixtures/straggler/balanced, 29 figures of 4 ranks) into a temporary folder:
``jobs`` puts each in a folder of its own (``job00001/train.log``: N jobs, N runs),
``loose`` side by side with distinct names (``train.00001.log``). For each N, in fresh
processes: ``dptrace.load(folder)`` timed after the libraries are imported and one file
was loaded (the modules a load imports on first use), with its peak RSS (VmHWM) in
total and above that base; then ``dptrace report folder`` as a user runs it (a new
interpreter, terminal output to /dev/null), wall time. ``--big`` adds N = 20,000
(``--report-max 1000``: its report left out). Each time also in CPU seconds (user +
system, workers included), the figure a loaded machine moves least.

Baselines, measured in the same run: ``python -c "import pandas, pyarrow, rich"`` (what
any dptrace command pays before it reads a byte), and N = 1 (each N's ratio to it).
Targets (issue 32): 20,000 files load in under a minute at under 1 GB; a folder of 1,000
small runs at most 15x the time of one; nothing per file that is quadratic (the time per
file stays flat as N grows).
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

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "tests" / "fixtures" / "straggler" / "balanced" / "train.log"

# VmHWM: the peak RSS of this process image (ru_maxrss would count the parent's)
CHILD = """
import json, os, sys, time
import numpy, pandas, pyarrow
import dptrace
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
def cpu():
    t = os.times()   # this process and its workers (reaped ones)
    return t.user + t.system + t.children_user + t.children_system
dptrace.load(sys.argv[2])   # the modules a load imports on first use
base = hwm()
t, c = time.perf_counter(), cpu()
ds = dptrace.load(sys.argv[1])
dt, dc = time.perf_counter() - t, cpu() - c
print(json.dumps({"base_kb": base, "peak_kb": hwm(), "seconds": dt, "cpu_seconds": dc,
                  "rows": {k: len(ds[k]) for k in ds.tables}, "runs": len(ds.runs),
                  "sources": len(ds.sources), "dptrace": dptrace.__file__}))
"""


def make(folder: Path, n: int, log: Path, layout: str) -> None:
    """``n`` copies of ``log`` in ``folder`` (hard links where the file system allows)."""
    folder.mkdir(parents=True)
    for k in range(n):
        if layout == "jobs":
            (folder / f"job{k:05d}").mkdir()
            dest = folder / f"job{k:05d}" / log.name
        else:
            dest = folder / f"{log.stem}.{k:05d}{log.suffix}"
        try:
            os.link(log, dest)
        except OSError:
            shutil.copyfile(log, dest)


def wall(cmd: list[str]) -> float:
    return timed(cmd)[0]


def timed(cmd: list[str]) -> tuple[float, float]:
    """``cmd``'s wall time and CPU time (user + system, its workers included): on a shared
    machine the CPU seconds are the figure that does not move with the load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    dt = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return dt, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def load_child(folder: Path, one: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(folder), str(one)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def loadavg() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def run(counts: list[int], log: Path, layout: str, report: bool,
        report_max: int | None = None) -> dict:
    dptrace_cli = shutil.which("dptrace")
    imports = min(wall([sys.executable, "-c", "import pandas, pyarrow, rich"])
                  for _ in range(3))
    res: dict = {"log": str(log), "log_bytes": log.stat().st_size, "layout": layout,
                 "imports_s": imports, "load_average_start": loadavg(), "rows": []}
    with tempfile.TemporaryDirectory(prefix="dptrace-many-") as tmp:
        one = Path(tmp) / "warm"
        make(one, 1, log, layout)
        for n in counts:
            folder = Path(tmp) / f"n{n}"
            make(folder, n, log, layout)
            mem = load_child(folder, one)
            row = {"files": n, "load_s": mem["seconds"], "load_cpu_s": mem["cpu_seconds"],
                   "load_ms_per_file": 1000 * mem["seconds"] / n,
                   "peak_mb": mem["peak_kb"] / 1024,
                   "above_base_mb": (mem["peak_kb"] - mem["base_kb"]) / 1024,
                   "rows": mem["rows"], "runs": mem["runs"], "sources": mem["sources"],
                   "dptrace": mem["dptrace"]}
            if report and dptrace_cli and (report_max is None or n <= report_max):
                row["report_s"], row["report_cpu_s"] = timed(
                    [dptrace_cli, "report", str(folder)])
            res["rows"].append(row)
            print(json.dumps(row), flush=True)
            shutil.rmtree(folder)
    first = res["rows"][0]
    for row in res["rows"]:
        row["load_x_first"] = row["load_s"] / first["load_s"]
        if "report_s" in row:
            row["report_x_first"] = row["report_s"] / first["report_s"]
            row["report_x_imports"] = row["report_s"] / imports
    res["load_average_end"] = loadavg()
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--counts", default="1,100,1000",
                   help="numbers of files, comma-separated; the first is the baseline (1)")
    p.add_argument("--big", action="store_true", help="also 20,000 files")
    p.add_argument("--layout", choices=("jobs", "loose"), default="jobs")
    p.add_argument("--log", type=Path, default=LOG)
    p.add_argument("--no-report", action="store_true", help="time load only")
    p.add_argument("--report-max", type=int,
                   help="time the report only up to this many files (20,000 reports: hours)")
    p.add_argument("--json", type=Path, help="write the numbers here as well")
    a = p.parse_args()
    counts = [int(c) for c in a.counts.split(",") if c.strip()]
    if a.big and 20_000 not in counts:
        counts.append(20_000)
    res = run(counts, a.log, a.layout, not a.no_report, a.report_max)
    print(f"imports (python -c 'import pandas, pyarrow, rich'): {res['imports_s']:.2f} s; "
          f"load average {res['load_average_start']} -> {res['load_average_end']}")
    nan = float("nan")
    print(f"{'files':>7} {'load s':>8} {'cpu s':>7} {'ms/file':>8} {'x one':>7} "
          f"{'report s':>9} {'cpu s':>7} {'x one':>7} {'peak MB':>8} {'+base MB':>9}")
    for r in res["rows"]:
        print(f"{r['files']:>7} {r['load_s']:>8.2f} {r['load_cpu_s']:>7.2f} "
              f"{r['load_ms_per_file']:>8.2f} {r['load_x_first']:>7.1f} "
              f"{r.get('report_s', nan):>9.2f} {r.get('report_cpu_s', nan):>7.2f} "
              f"{r.get('report_x_first', nan):>7.1f} {r['peak_mb']:>8.0f} "
              f"{r['above_base_mb']:>9.0f}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
