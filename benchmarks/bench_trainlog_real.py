"""Benchmark: read_trainlog on every real training log of a folder, engine by engine.

    python benchmarks/bench_trainlog_real.py [DIR] [--repeat 5] [--tree LABEL=DIR ...]

DIR defaults to ``../shared/realdata/trainlog`` (28 logs written by the real tools). One fresh
interpreter per engine (and per other dptrace tree given with ``--tree``: another checkout,
imported through ``PYTHONPATH``, so that before/after ratios come from one run) reads every
file ``--repeat`` times (in this process: ``executor="serial"``); the best CPU time of each
file (``time.process_time``: the machine may be shared) is summed. The rows of every engine and
tree must be the same (exits 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHILD = """
import json, sys, time
import dptrace
engine, repeat, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
out = {}
for p in paths:
    best = None
    for _ in range(repeat):
        t = time.process_time()
        ds = dptrace.read_trainlog(p, engine=engine, executor="serial")
        s = time.process_time() - t
        best = s if best is None else min(best, s)
    rows = [len(ds["throughput"]), len(ds["train_metrics"]),
            float(ds["throughput"]["value"].sum()), float(ds["train_metrics"]["value"].sum())]
    out[p] = {"s": best, "rows": repr(rows)}
print(json.dumps({"dptrace": dptrace.__file__, "files": out}))
"""


def run(engine: str, repeat: int, paths: list[str], tree: str | None) -> dict:
    # in the tree's directory: ``python -c`` puts the working directory first on sys.path
    env = {**os.environ, "PYTHONPATH": tree} if tree else None
    out = subprocess.run([sys.executable, "-c", CHILD, engine, str(repeat), *paths],
                         capture_output=True, text=True, check=True, env=env,
                         cwd=tree).stdout
    res = json.loads(out.strip().splitlines()[-1])
    if tree and not res["dptrace"].startswith(str(Path(tree).resolve())):
        raise SystemExit(f"FAIL: the child imported {res['dptrace']}, not the tree {tree}")
    return dict(res["files"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?", type=Path,
                    default=ROOT.parent / "shared" / "realdata" / "trainlog")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tree", action="append", default=[], metavar="LABEL=DIR")
    args = ap.parse_args()
    paths = sorted(str(p) for p in args.dir.iterdir() if p.is_file())
    trees = {"this tree": None, **dict(t.split("=", 1) for t in args.tree)}
    results = {}
    for label, tree in trees.items():
        for engine in ("fast", "general"):
            results[f"{engine} [{label}]"] = run(engine, args.repeat, paths, tree)
    print(f"{len(paths)} logs in {args.dir}; best CPU time of {args.repeat} per file, summed\n")
    base = sum(r["s"] for r in results["general [this tree]"].values())
    for name, res in results.items():
        total = sum(r["s"] for r in res.values())
        print(f"{name:32} {total:8.3f} s  {total / base:5.2f}x general [this tree]")
    ref = results["general [this tree]"]
    same = all(res[p]["rows"] == ref[p]["rows"] for res in results.values() for p in paths)
    print(f"\nsame rows from every engine and tree: {'yes' if same else 'NO'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
