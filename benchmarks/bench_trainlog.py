"""Benchmark: dptrace.read_trainlog on a large slurm log, side by side with grep on the same file.

    python benchmarks/bench_trainlog.py [--size-mb 1000] [--instances 64] [--seed 0]
                                        [--repeat 3] [--keep] [--json OUT]
                                        [--tree LABEL=DIR ...]

Generates a log with :mod:`gen_trainlog` (64 ``srun --label`` ranks, > 95 % noise lines,
tqdm / DeepSpeed / HF Trainer / Horovod / SambaFlow throughput lines) into a temporary
directory, or reuses ``benchmarks/.data/`` when a file with the same parameters is there
(``--keep`` writes it there). dptrace's modules are compiled to bytecode first (as an
install does; where ``PYTHONDONTWRITEBYTECODE`` is set each child would compile them), and
the file is read once to warm the page cache, then, best of
``--repeat`` rounds, each round in this order:

* ``LC_ALL=C grep -c -E '<throughput keywords>'`` and ``LC_ALL=C grep -c samples_per_sec``;
* ``python -c "import dptrace"``: interpreter + import baseline (wall time and peak RSS);
* ``python -c "import dptrace; ds = dptrace.read_trainlog(PATH); ..."`` in a fresh process:
  wall time (less the time the child then takes to count the rows for the checks below),
  parse time inside it, peak RSS of that process (``VmHWM``), peak RSS of its
  largest scan worker (``RUSAGE_CHILDREN``), and the peak RSS of the whole process tree,
  sampled every 10 ms from ``/proc`` (the parser forks scan workers on large files);
* ``python -c "import dptrace; ds = dptrace.load(PATH)"``: what ``dptrace report`` reads
  (the training log and every other format that claims the file: the NCCL lines in it);

``--tree LABEL=DIR`` also runs the ``read_trainlog`` child with dptrace imported from another
checkout (``PYTHONPATH=DIR``) in each round, and checks it finds the same rows.

Then it checks the rows found against ``<file>.expected.json`` and exits 1, printing FAIL,
when any count differs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_trainlog  # noqa: E402

DATA = Path(__file__).resolve().parent / ".data"
KEYWORDS = ("samples_per_s|_per_second|PerSec|/sec|it/s|s/it|/s]|/s,|per iteration"
            "|'loss'|Loss:|loss:")
MB = 1_000_000

# one fresh interpreter per measurement; no path: the import baseline
CHILD = """
import json, resource, sys, time
t0 = time.perf_counter()
import dptrace
t1 = time.perf_counter()
out = {"import_s": t1 - t0}
if len(sys.argv) > 2:   # what `dptrace report` reads: every format that claims the file
    ds = dptrace.load(sys.argv[1])
    out["parse_s"] = time.perf_counter() - t1
    out["tables"] = {name: len(ds[name]) for name in ds.tables}
    out["checks_s"] = time.perf_counter() - t1 - out["parse_s"]
elif len(sys.argv) > 1:
    ds = dptrace.read_trainlog(sys.argv[1])
    out["parse_s"] = time.perf_counter() - t1
    tp, tm = ds["throughput"], ds["train_metrics"]
    # the generator counts lines: a closing redraw (a repeat) is not one more figure, and
    # the world-size statements in its noise (export WORLD_SIZE=64) are not its records
    tp = tp[~tp["repeat"]] if "repeat" in tp else tp
    tm = tm[~tm["name"].isin(["world_size", "total_img_sec_ci"])]
    out["throughput"] = {str(k): int(v) for k, v in tp["pattern"].value_counts().items()}
    out["train_metrics"] = {str(k): int(v) for k, v in tm["pattern"].value_counts().items()}
    out["instances"] = int(tp["instance"].nunique())
    out["problems"] = [f"line {p.line}: {p.message}" for p in ds.problems.itertuples()]
    out["checks_s"] = time.perf_counter() - t1 - out["parse_s"]
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        out["hwm_kb"] = int(line.split()[1])
out["workers_kb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps(out))
"""


# --- the input file --------------------------------------------------------------------------


def kept_path(size_mb: float, instances: int, seed: int) -> Path:
    return DATA / f"trainlog_{size_mb:g}mb_{instances}i_seed{seed}.out"


def reusable(path: Path, params: dict[str, Any]) -> bool:
    """A kept file made with the same parameters and still of the size it was written at."""
    exp = gen_trainlog.expected_path(path)
    if not (path.exists() and exp.exists()):
        return False
    meta = json.loads(exp.read_text())
    return bool(meta.get("params") == params and meta.get("bytes") == path.stat().st_size)


def prepare(args: argparse.Namespace, tmp: Path) -> tuple[Path, dict[str, Any], float | None]:
    """The log to read, its expectations, and the generation time (None when reused)."""
    params = {"size_mb": args.size_mb, "instances": args.instances, "seed": args.seed}
    kept = kept_path(args.size_mb, args.instances, args.seed)
    if reusable(kept, params):
        return kept, json.loads(gen_trainlog.expected_path(kept).read_text()), None
    if args.keep:
        DATA.mkdir(exist_ok=True)
    path = kept if args.keep else tmp / kept.name
    t = time.perf_counter()
    expected = gen_trainlog.generate(path, args.size_mb, args.instances, args.seed)
    return path, expected, time.perf_counter() - t


def bytecode() -> None:
    """dptrace's modules compiled to bytecode once, as installing a package does: where
    ``PYTHONDONTWRITEBYTECODE`` is set, every child would compile them again (0.07 s)."""
    spec = importlib.util.find_spec("dptrace")
    if spec is not None and spec.origin is not None:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(spec.origin).parent)],
                       check=False, capture_output=True)


def warm(path: Path) -> float:
    """Read the file once, in chunks (keeps this process small: children inherit its peak)."""
    t = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        while fh.read(16 << 20):
            pass
    return time.perf_counter() - t


# --- measurements ----------------------------------------------------------------------------


def timed(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env).stdout
    return time.perf_counter() - t, out.strip()


def grep(pattern: str, path: Path, extended: bool) -> tuple[float, int]:
    env = {**os.environ, "LC_ALL": "C"}
    flags = ["-c", "-E"] if extended else ["-c"]
    seconds, out = timed(["grep", *flags, pattern, str(path)], env)
    return seconds, int(out or 0)


class TreeRss:
    """Peak summed VmRSS and RssAnon of a process and its descendants, sampled from /proc."""

    def __init__(self, pid: int, interval: float = 0.01) -> None:
        self.pid, self.interval = pid, interval
        self.peak_kb = self.peak_anon_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = anon = 0
            for pid in self._tree(self.pid):
                r, a = _status_kb(pid)
                rss, anon = rss + r, anon + a
            self.peak_kb, self.peak_anon_kb = max(self.peak_kb, rss), max(self.peak_anon_kb, anon)
            self._stop.wait(self.interval)

    def _tree(self, pid: int) -> list[int]:
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return [pid]
        return [pid, *(p for k in kids for p in self._tree(int(k)))]


def _status_kb(pid: int) -> tuple[int, int]:
    rss = anon = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("RssAnon:"):
                anon = int(line.split()[1])
    except OSError:
        pass
    return rss, anon


def child(path: Path | None, load: bool = False, tree: str | None = None) -> dict[str, Any]:
    """Run CHILD in a fresh interpreter: wall time, its report, sampled tree RSS
    (``load``: ``dptrace.load`` instead of ``read_trainlog``; ``tree``: dptrace imported
    from that directory)."""
    cmd = [sys.executable, "-c", CHILD, *([str(path)] if path else []),
           *(["load"] if load else [])]
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


def measure(path: Path, repeat: int, trees: dict[str, str] | None = None) -> dict[str, Any]:
    """Interleaved rounds, so every reader sees the same cache state; best wall time of each.
    ``trees``: label -> another dptrace checkout, whose read_trainlog runs in the same rounds."""
    trees = trees or {}
    runs: dict[str, list[Any]] = {"grep": [], "grep1": [], "import": [], "dptrace": [],
                                  "load": [], **{f"tree {k}": [] for k in trees}}
    for _ in range(repeat):
        runs["grep"].append(grep(KEYWORDS, path, extended=True))
        runs["grep1"].append(grep("samples_per_sec", path, extended=False))
        runs["import"].append(child(None))
        runs["dptrace"].append(child(path))
        runs["load"].append(child(path, load=True))
        for label, tree in trees.items():
            runs[f"tree {label}"].append(child(path, tree=tree))
    other = {}
    for label in trees:
        rs = runs[f"tree {label}"]
        best_t = min(rs, key=lambda r: r["wall_s"])
        other[label] = {"dptrace_s": best_t["wall_s"], "parse_s": min(r["parse_s"] for r in rs),
                        "rss_mb": max(r["hwm_kb"] for r in rs) * 1024 / MB,
                        "found": {k: best_t[k] for k in ("throughput", "train_metrics",
                                                          "instances")}}
    dp, imp, ld = runs["dptrace"], runs["import"], runs["load"]
    best = min(dp, key=lambda r: r["wall_s"])
    return {
        "load_s": min(r["wall_s"] for r in ld), "load_parse_s": min(r["parse_s"] for r in ld),
        "load_rss_mb": max(r["hwm_kb"] for r in ld) * 1024 / MB,
        "load_tables": ld[0]["tables"],
        "grep_s": min(s for s, _ in runs["grep"]), "grep_lines": runs["grep"][0][1],
        "grep1_s": min(s for s, _ in runs["grep1"]), "grep1_lines": runs["grep1"][0][1],
        "import_s": min(r["wall_s"] for r in imp),
        "import_rss_mb": max(r["hwm_kb"] for r in imp) * 1024 / MB,
        "dptrace_s": best["wall_s"], "parse_s": min(r["parse_s"] for r in dp),
        "process_s": min(r["process_s"] for r in dp),
        "rss_mb": max(r["hwm_kb"] for r in dp) * 1024 / MB,
        "worker_rss_mb": max(r["workers_kb"] for r in dp) * 1024 / MB,
        "tree_rss_mb": max(r["tree_kb"] for r in dp) * 1024 / MB,
        "tree_anon_mb": max(r["tree_anon_kb"] for r in dp) * 1024 / MB,
        "found": {k: best[k] for k in ("throughput", "train_metrics", "instances")},
        "problems": best["problems"],
        "trees": other,
    }


# --- checking and reporting ------------------------------------------------------------------


def check(found: dict[str, Any], expected: dict[str, Any], grep_lines: int,
          ) -> list[tuple[str, int, int]]:
    """(what, found, expected) for every count the benchmark verifies."""
    rows = []
    for table in ("throughput", "train_metrics"):
        got, want = found[table], expected[f"{table}_rows"]
        rows.append((table, sum(got.values()), expected[f"{table}_rows_total"]))
        rows += [(f"  {table}[{k}]", got.get(k, 0), want.get(k, 0))
                 for k in sorted(set(got) | set(want))]
    rows.append(("instances in throughput", found["instances"], expected["instances"]))
    rows.append(("grep -E keyword lines (generator check)", grep_lines,
                 expected["throughput_lines"]))
    return rows


def report(path: Path, expected: dict[str, Any], m: dict[str, Any], repeat: int,
           gen_s: float | None) -> None:
    size = expected["bytes"]
    g = m["grep_s"]
    made = "reused" if gen_s is None else f"generated in {gen_s:.1f} s"
    print(f"{path} ({made})")
    print(f"{size / MB:.1f} MB, {expected['lines']:,} lines ({expected['noise_share']:.1%} noise),"
          f" {expected['instances']} instances; best of {repeat}\n")
    print(f"{'':38} {'wall s':>8} {'x grep':>7} {'peak RSS MB':>12} {'x input':>8}")

    def row(name: str, secs: float | None, rss: float | None = None, per_input: bool = True,
            ) -> None:
        t = f"{secs:8.3f} {secs / g:7.2f}" if secs is not None else " " * 16
        r = f"{rss:12.1f}" if rss is not None else ""
        r += f" {rss * MB / size:8.2f}" if rss is not None and per_input else ""
        print(f"{name:38} {t} {r}".rstrip())

    row(f"grep -c -E keywords ({m['grep_lines']:,} lines)", g)
    row(f"grep -c samples_per_sec ({m['grep1_lines']:,} lines)", m["grep1_s"])
    row("python -c 'import dptrace'", m["import_s"], m["import_rss_mb"], per_input=False)
    row("dptrace.read_trainlog (child process)", m["dptrace_s"], m["rss_mb"])
    row("  of which read_trainlog() itself", m["parse_s"])
    row("  the process with its row counts", m["process_s"])
    if m["worker_rss_mb"]:
        row("  largest scan worker", None, m["worker_rss_mb"])
    row("  whole process tree (sampled)", None, m["tree_rss_mb"])
    row("  whole process tree, anonymous only", None, m["tree_anon_mb"])
    for label, t in m["trees"].items():
        row(f"read_trainlog [{label}] (child process)", t["dptrace_s"], t["rss_mb"])
        row("  of which read_trainlog() itself", t["parse_s"])
    row("dptrace.load (child process)", m["load_s"], m["load_rss_mb"])
    row("  of which load() itself", m["load_parse_s"])
    print("  tables: " + ", ".join(f"{k} {v:,}" for k, v in m["load_tables"].items()))
    print(f"\nthroughput: {size / MB / m['parse_s']:.0f} MB/s parse, "
          f"{size / MB / g:.0f} MB/s grep")


def print_checks(rows: list[tuple[str, int, int]]) -> bool:
    print(f"\n{'rows':38} {'found':>10} {'expected':>10}")
    ok = True
    for what, got, want in rows:
        ok &= got == want
        print(f"{what:38} {got:10,} {want:10,}  {'ok' if got == want else 'MISMATCH'}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size-mb", type=float, default=1000.0)
    ap.add_argument("--instances", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the generated log in benchmarks/.data/ for later runs")
    ap.add_argument("--json", type=Path, help="also write the numbers here")
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR",
                    help="also run read_trainlog with dptrace imported from DIR (another "
                         "checkout), in the same rounds: before/after ratios from one run")
    args = ap.parse_args()
    trees = dict(t.split("=", 1) for t in args.tree)
    with tempfile.TemporaryDirectory() as tmp:
        path, expected, gen_s = prepare(args, Path(tmp))
        bytecode()
        warm_s = warm(path)
        m = measure(path, args.repeat, trees)
    report(path, expected, m, args.repeat, gen_s)
    rows = check(m["found"], expected, m["grep_lines"])
    ok = print_checks(rows)
    for label, t in m["trees"].items():
        same = t["found"] == m["found"]
        ok &= same
        print(f"{'same rows as [' + label + ']':38} {'yes' if same else 'NO':>10}")
    for p in m["problems"]:
        print(f"parser problem: {p}")
    if args.json:
        size = expected["bytes"]
        out = {"file": str(path), "params": expected["params"], "bytes": size,
               "lines": expected["lines"], "generate_s": gen_s, "warm_read_s": warm_s,
               "repeat": args.repeat, **{k: v for k, v in m.items() if k != "found"},
               "ratio_dptrace_over_grep": m["dptrace_s"] / m["grep_s"],
               "ratio_parse_over_grep": m["parse_s"] / m["grep_s"],
               "rss_over_input": m["rss_mb"] * MB / size,
               "tree_rss_over_input": m["tree_rss_mb"] * MB / size,
               "checks": [{"what": w.strip(), "found": f, "expected": e} for w, f, e in rows],
               "ok": ok}
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    if not ok:
        print("\nFAIL: rows found by dptrace differ from the generator's counts", file=sys.stderr)
        return 1
    print("\nPASS: every count matches")
    return 0


if __name__ == "__main__":
    sys.exit(main())
