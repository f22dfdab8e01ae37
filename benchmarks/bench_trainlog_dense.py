"""Benchmark: dptrace.load on a tqdm-dense slurm log, side by side with grep on the same file.

    python benchmarks/bench_trainlog_dense.py [--size-mb 200] [--repeat 3] [--file PATH]
                                              [--executor auto|serial|both] [--json OUT]
                                              [--tree LABEL=DIR ...]

The worst case for the training-log reader (issue 14): every fourth line is a tqdm bar of
several ``\\r``-separated updates with a ``loss=..., v_num=0`` postfix, so a 200 MB log holds
~4.4 M rows (1.4 M throughput, 3 M train_metrics). The input is written by the shared
generator ``gen_dense_slurm_log.py`` (64 ``srun --label`` ranks, SambaFlow lines, noise) into
a temporary directory, or read from ``--file``. dptrace's modules are compiled to bytecode
(as an install does), the file is read once to warm the page cache, then, best of
``--repeat`` rounds, each round in this order:

* ``LC_ALL=C grep -c samples_per_sec`` (a literal: the baseline of the ratio);
* ``python -c "import dptrace"``: interpreter + import (wall time and peak RSS);
* for each executor asked for (``auto``: the loader's default, two forked scan workers for a
  file of 128 MB or more on a machine with two cores or more; ``serial``: this process only),
  ``python -c "import dptrace; ds = dptrace.load(PATH, executor=...)"`` in a fresh process:
  wall time (less the time the child then takes to count the rows for the checks below:
  the benchmark's work, not dptrace's), the time of ``load()`` itself and its CPU seconds
  (the process's and its scan workers': comparable where the machine is shared), the peak RSS of
  that process (``VmHWM``), of its
  largest scan worker (``RUSAGE_CHILDREN``), and of the whole process tree, sampled every
  10 ms from ``/proc`` (summed, and anonymous memory only: the file is memory-mapped, and
  the pages of it a process touches count towards its RSS).

The machine's 1-minute load average before and after each round is printed beside them:
above the number of cores, wall times say how busy the machine was, CPU seconds less so.

``--tree LABEL=DIR`` runs each executor again with dptrace imported from another checkout
(``PYTHONPATH=DIR``), in the same rounds: before/after ratios from one run.

Then it checks the rows: the throughput rows of the SambaFlow pattern must equal the
``samples_per_sec`` lines grep counts that are throughput lines (the generator also writes a
distractor that mentions ``samples_per_sec``), and exits 1, printing FAIL, when they differ.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_trainlog import TreeRss, bytecode, warm  # noqa: E402

GENERATOR = Path("/work/shared/bench/gen_dense_slurm_log.py")
LITERAL = "samples_per_sec"
DISTRACTOR = "samples_per_sec is not reported"
MB = 1_000_000

# one fresh interpreter per measurement; no path: the import baseline
CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
import dptrace
t1 = time.perf_counter()
out = {"import_s": t1 - t0}
if len(sys.argv) > 1:
    cpu0 = time.process_time()
    ds = dptrace.load(sys.argv[1], executor=sys.argv[2])
    out["load_s"] = time.perf_counter() - t1
    c1 = time.process_time()
    tp, tm = ds["throughput"], ds["train_metrics"]
    out["throughput"] = {str(k): int(v) for k, v in tp["pattern"].value_counts().items()}
    out["train_metrics"] = {str(k): int(v) for k, v in tm["pattern"].value_counts().items()}
    out["table_mb"] = sum(int(df.memory_usage(deep=True).sum()) for df in (tp, tm)) / 1e6
    out["problems"] = [f"{p.severity}: {p.message}" for p in ds.problems.itertuples()]
    out["checks_s"] = time.perf_counter() - t1 - out["load_s"]
    out["checks_cpu_s"] = time.process_time() - c1
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        out["hwm_kb"] = int(line.split()[1])
out["workers_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
if "load_s" in out:   # CPU seconds of load() (this process and its scan workers)
    out["cpu_s"] = sum(r.ru_utime + r.ru_stime for r in (
        resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)))
    out["cpu_s"] -= cpu0 + out.get("checks_cpu_s", 0.0)
print(json.dumps(out))
"""


def generate(path: Path, size_mb: float) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, str(GENERATOR), str(path), "--size-mb", f"{size_mb:g}",
                    "--label"], check=True)
    return time.perf_counter() - t


def grep(pattern: str, path: Path) -> tuple[float, int]:
    env = {**os.environ, "LC_ALL": "C"}
    t = time.perf_counter()
    out = subprocess.run(["grep", "-c", pattern, str(path)], check=False, capture_output=True,
                         text=True, env=env).stdout
    return time.perf_counter() - t, int(out.strip() or 0)


def child(path: Path | None, executor: str = "auto", tree: str | None = None) -> dict[str, Any]:
    """Run CHILD in a fresh interpreter (importing dptrace from ``tree`` when given):
    wall time, its report, sampled tree RSS."""
    cmd = [sys.executable, "-c", CHILD, *([str(path), executor] if path else [])]
    # in the tree's directory: ``python -c`` puts the working directory first on sys.path
    env = {**os.environ, "PYTHONPATH": tree} if tree else None
    t = time.perf_counter()
    with (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env, cwd=tree) as p,
          TreeRss(p.pid) as tree):
        out, err = p.communicate()
    wall = time.perf_counter() - t
    if p.returncode:
        raise SystemExit(f"FAIL: dptrace child exited {p.returncode}:\n{err}")
    res: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    # the row counts the child takes for the checks are the benchmark's work, not dptrace's
    res.update(wall_s=wall - res.get("checks_s", 0.0), process_s=wall, tree_kb=tree.peak_kb,
               tree_anon_kb=tree.peak_anon_kb)
    return res


def measure(path: Path, executors: list[str], repeat: int,
            trees: dict[str, str] | None = None) -> dict[str, Any]:
    """Interleaved rounds (every reader sees the same cache state); best wall time of each.
    ``trees``: label -> another dptrace tree, each executor also run with it (``e [label]``)."""
    runs: dict[str, list[Any]] = {"grep": [], "import": [], **{e: [] for e in executors}}
    loads = [os.getloadavg()[0]]
    for _ in range(repeat):
        runs["grep"].append(grep(LITERAL, path))
        runs["import"].append(child(None))
        for e in executors:
            name, _, label = e.partition(" [")
            runs[e].append(child(path, name, (trees or {}).get(label.rstrip("]"))))
        loads.append(os.getloadavg()[0])
    out: dict[str, Any] = {
        # the machine's 1-minute load average before and after each round (a shared
        # machine: wall times mean little above the cores' count, CPU seconds still do)
        "load_avg": loads,
        "grep_s": min(s for s, _ in runs["grep"]), "grep_lines": runs["grep"][0][1],
        "import_s": min(r["wall_s"] for r in runs["import"]),
        "import_rss_mb": max(r["hwm_kb"] for r in runs["import"]) * 1024 / MB,
    }
    for e in executors:
        best = min(runs[e], key=lambda r: r["wall_s"])
        out[e] = {
            "wall_s": best["wall_s"], "load_s": min(r["load_s"] for r in runs[e]),
            "cpu_s": min(r["cpu_s"] for r in runs[e]),
            "process_s": min(r["process_s"] for r in runs[e]),
            "rss_mb": max(r["hwm_kb"] for r in runs[e]) * 1024 / MB,
            "worker_rss_mb": max(r["workers_kb"] for r in runs[e]) * 1024 / MB,
            "tree_rss_mb": max(r["tree_kb"] for r in runs[e]) * 1024 / MB,
            "tree_anon_mb": max(r["tree_anon_kb"] for r in runs[e]) * 1024 / MB,
            "table_mb": best["table_mb"],
            "throughput": best["throughput"], "train_metrics": best["train_metrics"],
            "problems": [p for p in best["problems"] if "to read and parse" not in p],
        }
    return out


def report(path: Path, size: int, m: dict[str, Any], executors: list[str], repeat: int,
           gen_s: float | None) -> None:
    g = m["grep_s"]
    made = "given" if gen_s is None else f"generated in {gen_s:.1f} s"
    print(f"{path} ({made}): {size / MB:.1f} MB; best of {repeat}; load average "
          f"{' '.join(f'{x:.1f}' for x in m['load_avg'])} (before, after each round; "
          f"{os.cpu_count()} cores)\n")
    print(f"{'':44} {'wall s':>8} {'x grep':>7} {'peak RSS MB':>12} {'x input':>8}")

    def row(name: str, secs: float | None, rss: float | None = None, per_input: bool = True,
            ) -> None:
        t = f"{secs:8.3f} {secs / g:7.2f}" if secs is not None else " " * 16
        r = f"{rss:12.1f}" if rss is not None else ""
        r += f" {rss * MB / size:8.2f}" if rss is not None and per_input else ""
        print(f"{name:44} {t} {r}".rstrip())

    row(f"grep -c {LITERAL} ({m['grep_lines']:,} lines)", g)
    row("python -c 'import dptrace'", m["import_s"], m["import_rss_mb"], per_input=False)
    for e in executors:
        r = m[e]
        row(f"dptrace.load, executor={e} (child process)", r["wall_s"], r["rss_mb"])
        row("  of which load() itself", r["load_s"])
        row("  CPU seconds of load() (process + workers)", r["cpu_s"])
        row("  the process with its row counts (checks)", r["process_s"])
        if r["worker_rss_mb"]:
            row("  largest scan worker", None, r["worker_rss_mb"])
        row("  whole process tree (sampled)", None, r["tree_rss_mb"])
        row("  whole process tree, anonymous only", None, r["tree_anon_mb"])
        row("  the two tables themselves (deep)", None, r["table_mb"])


def check(m: dict[str, Any], executors: list[str]) -> bool:
    """The SambaFlow throughput rows against grep's count of real samples_per_sec lines; the
    same rows from every executor; no problems but the timing note."""
    ok = True
    distractors = grep(DISTRACTOR, Path(m["path"]))[1]
    want = m["grep_lines"] - distractors - 1  # and the generator's header line
    print(f"\n{'check':44} {'found':>10} {'expected':>10}")
    for e in executors:
        got = m[e]["throughput"].get("sambaflow", 0)
        good = got == want
        ok &= good
        print(f"{'sambaflow throughput rows, ' + e:44} {got:10,} {want:10,}  "
              f"{'ok' if good else 'MISMATCH'}")
        print(f"{'  throughput rows / train_metrics rows':44} "
              f"{sum(m[e]['throughput'].values()):10,} {sum(m[e]['train_metrics'].values()):10,}")
        for p in m[e]["problems"]:
            ok = False
            print(f"  parser problem: {p}")
    if len(executors) > 1:
        same = all(m[e]["throughput"] == m[executors[0]]["throughput"] and
                   m[e]["train_metrics"] == m[executors[0]]["train_metrics"]
                   for e in executors)
        ok &= same
        print(f"{'same rows from every executor':44} {'yes' if same else 'NO':>10}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=200.0)
    ap.add_argument("--file", type=Path, help="read this log instead of generating one")
    ap.add_argument("--executor", choices=("auto", "serial", "both"), default="both")
    ap.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR",
                    help="also run each executor with dptrace imported from DIR (another "
                         "checkout: before/after ratios in one run)")
    args = ap.parse_args()
    executors = ["auto", "serial"] if args.executor == "both" else [args.executor]
    trees = dict(t.split("=", 1) for t in args.tree)
    executors += [f"{e} [{label}]" for label in trees for e in list(executors)]
    with tempfile.TemporaryDirectory() as tmp:
        path, gen_s = args.file, None
        if path is None:
            path = Path(tmp) / f"slurm-dense-{args.size_mb:g}mb.out"
            gen_s = generate(path, args.size_mb)
        size = path.stat().st_size
        bytecode()
        for tree in trees.values():  # the other checkouts too: every child imports compiled code
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(tree) / "dptrace")],
                           check=False, capture_output=True)
        warm_s = warm(path)
        m = measure(path, executors, args.repeat, trees)
        m["path"] = str(path)
        report(path, size, m, executors, args.repeat, gen_s)
        ok = check(m, executors)
    if args.json:
        out = {"file": str(path), "bytes": size, "generate_s": gen_s, "warm_read_s": warm_s,
               "repeat": args.repeat, **m, "ok": ok,
               **{f"ratio_{e}": m[e]["wall_s"] / m["grep_s"] for e in executors},
               **{f"rss_over_input_{e}": m[e]["rss_mb"] * MB / size for e in executors}}
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    if not ok:
        print("\nFAIL: rows or problems differ from what the log holds", file=sys.stderr)
        return 1
    print("\nPASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
