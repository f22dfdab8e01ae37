"""Benchmark: the pyparsing-grammar formats (NCCL debug lines, nccl-tests, mpiP reports, ...)
on their largest real inputs, and NCCL lines on a dense log, against grep on the same file.

    python benchmarks/bench_grammars.py [--dense-mb 50] [--repeat 3] [--json out.json]

Each input is read with ``dptrace.load(path, format=FMT)`` in a fresh child process (the
time of ``load`` alone, and the child's peak RSS) and compared, in the same run, with
``LC_ALL=C grep -c LITERAL`` on the same file (the baseline reader: a pass over the bytes).
Real inputs come from ``../shared/realdata`` and the test fixtures; inputs that are missing
are skipped. The dense NCCL log is the largest real NCCL log (the Azure MLPerf 8-node run,
~5,000 NCCL lines of every kind dptrace reads) repeated to ``--dense-mb`` with each copy's
pids changed, so that every copy is a new set of processes: the worst case of NCCL lines per
byte (a real job prints them at start-up; here every line is one).

The grammars run only on the lines their formats select (a prefilter in C finds them), so
the figure to watch is MB/s on the dense log: these formats must stay off GB-scale paths.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT.parent / "shared" / "realdata"
FIX = ROOT / "tests" / "fixtures"
#: (format, path, grep literal, what it is)
INPUTS = (
    ("nccl", REAL / "scaling" / "mlperf2.0_azure_nd96amsr_ssd_n8_64gpu_ncclinfo.txt",
     "NCCL INFO", "largest real NCCL log (Azure MLPerf SSD, 8 nodes x 8 A100)"),
    ("nccl", REAL / "nccl" / "p5_efa_nccltests_allreduce_2n16gpu_tagoutput.log",
     "NCCL INFO", "AWS p5, 16 ranks, mpirun --tag-output"),
    ("nccltests", REAL / "scaling" / "polaris_nccltests_allreduce_n540x4gpu.dat",
     "float", "largest real nccl-tests output (Polaris, 2,160 ranks)"),
    ("mpip", FIX / "mpip", "@", "mpiP reports of the fixtures (largest file)"),
)

#: the child loads a small piece of the input first (imports and the format's reader and
#: grammar built: a one-time cost), then times the whole input
CHILD = """
import resource, sys, time, dptrace
dptrace.load(sys.argv[3], format=sys.argv[2])
t = time.perf_counter()
ds = dptrace.load(sys.argv[1], format=sys.argv[2])
el = time.perf_counter() - t
rows = int(ds.sources["rows"].sum())
print(rows, el, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def best(cmd: list[str], repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        t = time.perf_counter()
        out = subprocess.run(cmd, check=False, capture_output=True, text=True).stdout
        times.append(time.perf_counter() - t)
    return min(times), out.strip()


def dense_nccl(src: Path, out: Path, size_mb: float) -> None:
    """``src``'s NCCL lines repeated to ``size_mb``, each copy with new pids."""
    lines = [ln for ln in src.read_text(encoding="utf-8", errors="replace").splitlines(True)
             if " NCCL " in ln]
    text = "".join(lines)
    pid = re.compile(r"^([\w.\-]+):(\d+):(\d+) ", re.M)
    want = int(size_mb * 1e6)
    with open(out, "w", encoding="utf-8") as fh:
        k = 0
        while fh.tell() < want:
            fh.write(pid.sub(lambda m, k=k: f"{m[1]}:{int(m[2]) + 100_000 * k}:{m[3]} ", text))
            k += 1


def measure(fmt: str, path: Path, literal: str, repeat: int, tmp: Path) -> dict[str, object]:
    size = path.stat().st_size
    data = path.read_bytes()  # warm the page cache for both readers
    warm = tmp / f"warm_{path.name}"
    warm.write_bytes(data[:data.rfind(b"\n", 0, 4096) + 1] or data[:4096])
    grep_s, count = best(["env", "LC_ALL=C", "grep", "-c", literal, str(path)], repeat)
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD, str(path), fmt, str(warm)], check=True,
                             capture_output=True, text=True).stdout.split()
        runs.append((float(out[1]), int(out[2]), int(out[0])))
    load_s, rss, rows = min(runs)
    return {"format": fmt, "file": path.name, "mb": size / 1e6, "rows": rows,
            "grep_lines": int(count or 0), "grep_s": grep_s, "load_s": load_s,
            "mb_per_s": size / 1e6 / load_s, "ratio": load_s / grep_s,
            "peak_rss_mb": rss / 1e6, "rss_x_file": rss / size}


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--dense-mb", type=float, default=50.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        todo = []
        for fmt, path, literal, what in INPUTS:
            if path.is_dir():
                files = sorted((p for p in path.rglob("*") if p.is_file()
                                and p.suffix not in (".tsv", ".md", ".sh", ".c", ".py")),
                               key=lambda p: p.stat().st_size)
                path = files[-1] if files else path / "missing"
            if path.exists():
                todo.append((fmt, path, literal, what))
        first = INPUTS[0][1]
        if first.exists():
            dense = Path(tmp) / "dense_nccl.log"
            dense_nccl(first, dense, args.dense_mb)
            todo.append(("nccl", dense, "NCCL INFO",
                         f"dense NCCL log: the largest real one repeated to {args.dense_mb:g} MB"))
        for fmt, path, literal, what in todo:
            r = measure(fmt, path, literal, args.repeat, Path(tmp))
            r["what"] = what
            results.append(r)
    print(f"{'format':10} {'file':48} {'MB':>7} {'rows':>9} {'load s':>8} {'MB/s':>7} "
          f"{'x grep':>7} {'RSS MB':>7} {'x file':>7}")
    for r in results:
        print(f"{r['format']:10} {str(r['file'])[:48]:48} {r['mb']:7.2f} {r['rows']:9,} "
              f"{r['load_s']:8.3f} {r['mb_per_s']:7.1f} {r['ratio']:7.0f} "
              f"{r['peak_rss_mb']:7.0f} {r['rss_x_file']:7.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
