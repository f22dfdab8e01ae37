"""Load time of 4096 mpitrace rank files against ``cat`` of the same files, side by side.

    python benchmarks/bench_mpitrace.py [--ranks 4096] [--dir DIR] [--repeat 3]

Generates one job's files with :mod:`gen_mpitrace` (into a temporary directory unless
``--dir`` names one), then times, best of ``--repeat`` runs each, in this order per round:
``cat`` of every file to /dev/null, ``dptrace.load(dir)`` (format detected per file, as
``dptrace report`` does), and ``dptrace.read_mpitrace(dir)`` (one batch, each table built
once). Peak RSS is measured in a fresh child process per reader, as a multiple of the input
size, in total and above the imported libraries: the child imports pandas, numpy, pyarrow
and the mpitrace reader and loads a job of 8 ranks (the modules a load imports on first
use) before it takes its base. CPU times are given beside the wall times (``cat``'s from
the children's rusage, dptrace's from ``time.process_time``): on a machine shared with
other jobs the wall times follow its load, the CPU times much less.
Target (issues 3 and 32): load within 6x of cat, at most 3x the input above the libraries.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_mpitrace  # noqa: E402

# VmHWM (peak RSS of this process image); ru_maxrss would inherit the parent's peak
CHILD = """
import json, sys, time
import numpy, pandas, pyarrow
import dptrace
from dptrace.formats.mpitrace import read
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
getattr(dptrace, sys.argv[1])(sys.argv[3])   # the modules a load imports on first use
base = hwm()
t = time.perf_counter()
ds = getattr(dptrace, sys.argv[1])(sys.argv[2])
dt = time.perf_counter() - t
print(json.dumps({"base_kb": base, "peak_kb": hwm(), "seconds": dt,
                  "rows": {k: len(v) for k, v in ds.items()}}))
"""


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def cpu(fn: Callable[[], object]) -> float:
    """CPU seconds of ``fn()``: this process's and its children's (``cat``)."""
    def used() -> float:
        me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF,
                                                    resource.RUSAGE_CHILDREN))
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    t = used()
    fn()
    return used() - t


def child(reader: str, folder: Path, small: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, reader, str(folder), str(small)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def run(folder: Path, repeat: int, small: Path) -> dict:
    import dptrace

    files = sorted(str(p) for p in folder.iterdir())
    size = sum(Path(f).stat().st_size for f in files)

    def cat() -> None:
        subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)

    timings = {"cat": [], "load": [], "read_mpitrace": []}  # type: dict[str, list[float]]
    cpus = {k: [] for k in timings}  # type: dict[str, list[float]]
    steps = {"cat": cat, "load": lambda: dptrace.load(folder),
             "read_mpitrace": lambda: dptrace.read_mpitrace(folder)}
    for _ in range(repeat):   # interleaved rounds: cat and dptrace see the same cache state
        for k, fn in steps.items():
            timings[k].append(best(fn, 1))
            cpus[k].append(cpu(fn))
    res = {"files": len(files), "input_mb": size / 1e6,
           **{f"{k}_s": min(v) for k, v in timings.items()},
           **{f"{k}_cpu_s": min(v) for k, v in cpus.items()}}
    for reader in ("load", "read_mpitrace"):
        res[f"{reader}_x_cat"] = res[f"{reader}_s"] / res["cat_s"]
        res[f"{reader}_cpu_x_cat"] = res[f"{reader}_cpu_s"] / res["cat_cpu_s"]
        mem = child(reader, folder, small)
        res[f"{reader}_peak_rss_x_input"] = mem["peak_kb"] * 1024 / size
        res[f"{reader}_rss_growth_x_input"] = (mem["peak_kb"] - mem["base_kb"]) * 1024 / size
        res[f"{reader}_rss_growth_mb"] = (mem["peak_kb"] - mem["base_kb"]) / 1024
        res[f"{reader}_rows"] = mem["rows"]
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ranks", type=int, default=4096)
    p.add_argument("--dir", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = a.dir or Path(tmp) / "mpitrace"
        if not folder.exists() or not any(folder.iterdir()):
            gen_mpitrace.generate(folder, a.ranks)
        small = Path(tmp) / "small"
        gen_mpitrace.generate(small, 8, job=1)
        res = run(folder, a.repeat, small)
    print(json.dumps(res, indent=2))
    for reader in ("load", "read_mpitrace"):
        print(f"{reader:>14}: {res[f'{reader}_s']:.3f} s = {res[f'{reader}_x_cat']:.1f}x cat "
              f"({res['cat_s']:.3f} s); CPU {res[f'{reader}_cpu_s']:.3f} s = "
              f"{res[f'{reader}_cpu_x_cat']:.1f}x cat's ({res['cat_cpu_s']:.3f} s); "
              f"peak RSS {res[f'{reader}_peak_rss_x_input']:.1f}x input "
              f"({res[f'{reader}_rss_growth_x_input']:.2f}x above the imported libraries)")


if __name__ == "__main__":
    main()
