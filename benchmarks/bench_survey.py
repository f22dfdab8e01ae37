"""Benchmark of ``dptrace survey`` (issue 33): wall and CPU seconds of a cold survey (empty
cache: every folder parsed and analysed) and a warm one (every folder from the cache), per
engine, and the peak memory of the survey's process and of its workers.

    python benchmarks/bench_survey.py --runs 200 --engines serial,processes
    python benchmarks/bench_survey.py --runs 1000 --engines processes --workers 2
    python benchmarks/bench_survey.py --runs 1000 --engines serial,processes,dask --workers 2
    python benchmarks/bench_survey.py --runs 10000 --engines processes --workers 2 --warm 3

``dask`` starts a Dask LocalCluster inside the survey (its start is in the cold figure).
``--warm N`` times N warm surveys after the cold one (the first of them also checks the
cache: nothing parsed). Run it from a copy of the tree that nobody edits (``git archive
HEAD | tar -x -C DIR; cd DIR``): the measuring interpreters import ``dptrace`` from the
working directory, and a warm survey rightly reparses everything when a core module
changed between the cold and the warm one.

The fleet is made by tests/fixtures/fleet/make_fleet.py (job folders copied from the real
fixtures, ten kinds in turn: mpitrace + Horovod benchmark logs with a straggler on a known
host, HF Trainer + DeepSpeed, DeepSpeed-Chat, Megatron-DeepSpeed, torchrun per-rank logs,
NCCL on sockets and on libfabric + GDR, a Horovod timeline with MPI profiles, PyTorch
traces) under a temporary directory, removed at the end. Each measurement runs in a fresh
interpreter (imports included, as a user's command pays them), so its peak RSS is its own.
The goals (issue 33, on a 2-core machine): cold 1,000 small runs under 60 s wall, warm
10,000 under 5 s, peak memory independent of the number of runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAKER = HERE.parent / "tests" / "fixtures" / "fleet" / "make_fleet.py"

_ONE = r"""
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
from dptrace.fleet import survey
fleet = survey(sys.argv[1], cache=sys.argv[2], engine=sys.argv[3],
               workers=None if sys.argv[4] == "-" else int(sys.argv[4]), batch=int(sys.argv[5]))
wall = time.perf_counter() - t0
me = resource.getrusage(resource.RUSAGE_SELF)
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall_s": wall, "cpu_s": me.ru_utime + me.ru_stime + kids.ru_utime
                  + kids.ru_stime, "peak_rss_mib": me.ru_maxrss / 1024,
                  "peak_rss_workers_mib": kids.ru_maxrss / 1024, "runs": len(fleet.fleet),
                  **{k: fleet.stats[k] for k in ("cached", "parsed", "analysed", "failed")}}))
"""


def measure(root: str, cache: str, engine: str, workers: int | None, batch: int) -> dict:
    """One survey in a fresh interpreter: its wall, CPU (with its workers'), peak RSS."""
    out = subprocess.run([sys.executable, "-c", _ONE, root, cache, engine,
                          "-" if workers is None else str(workers), str(batch)],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, nargs="+", default=[200], help="fleet sizes")
    p.add_argument("--engines", default="serial,processes", help="comma-separated engines")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--warm", type=int, default=1, help="warm surveys after each cold one")
    p.add_argument("--kinds", default=None,
                   help="comma-separated job-folder kinds of make_fleet.KINDS (default: all)")
    p.add_argument("--mix", choices=("fixtures", "small"), default="fixtures",
                   help="small: scripts/make_small_fleet.py's fleet (the smallest real logs "
                   "of each kind, the 1,000-run test's), instead of make_fleet's")
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = p.parse_args()
    sys.path.insert(0, str(MAKER.parent))
    sys.path.insert(0, str(HERE.parent / "scripts"))
    from make_fleet import make_fleet  # noqa: E402
    from make_small_fleet import make_small_fleet  # noqa: E402

    results = []
    tmp = Path(tempfile.mkdtemp(prefix="bench-survey-"))
    try:
        for n in args.runs:
            root = tmp / f"fleet-{n}"
            t = time.perf_counter()
            if args.mix == "small":
                make_small_fleet(root, n)
            else:
                make_fleet(root, n, tuple(args.kinds.split(",")) if args.kinds else None)
            print(f"# {n} job folders made in {time.perf_counter() - t:.1f} s", flush=True)
            for engine in args.engines.split(","):
                cache = tmp / f"cache-{n}-{engine}"
                for phase in ("cold", *["warm"] * args.warm):
                    r = measure(str(root), str(cache), engine, args.workers, args.batch)
                    r.update(runs_asked=n, engine=engine, phase=phase, batch=args.batch,
                             mix=args.mix,
                             load=os.getloadavg()[0])
                    results.append(r)
                    if args.json:   # as it goes: a long benchmark stopped keeps its numbers
                        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
                    print(f"{n:>6} {engine:<10} {phase:<4} wall {r['wall_s']:7.1f} s  "
                          f"cpu {r['cpu_s']:7.1f} s  peak {r['peak_rss_mib']:6.0f} MiB "
                          f"(workers {r['peak_rss_workers_mib']:.0f} MiB)  parsed "
                          f"{r['parsed']} cached {r['cached']} failed {r['failed']}  "
                          f"load {r['load']:.1f}", flush=True)
                shutil.rmtree(cache, ignore_errors=True)
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
