"""Load time of 4096 mpitrace rank files against ``cat`` of the same files, side by side.

    python benchmarks/bench_mpitrace.py [--ranks 4096] [--dir DIR] [--repeat 3]

Generates one job's files with :mod:`gen_mpitrace` (into a temporary directory unless
``--dir`` names one), then times, best of ``--repeat`` runs each, in this order per round:
``cat`` of every file to /dev/null, ``dptrace.load(dir)`` (format detected per file, as
``dptrace report`` does), and ``dptrace.read_mpitrace(dir)`` (one batch, each table built
once). Peak RSS is measured in a fresh child process per reader, as a multiple of the input
size, in total and above the interpreter's RSS after ``import dptrace``.
Target (issue 3): load within 6x of cat.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_mpitrace  # noqa: E402

# VmHWM (peak RSS of this process image); ru_maxrss would inherit the parent's peak
CHILD = """
import json, sys, time
import dptrace
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
base = hwm()
t = time.perf_counter()
ds = getattr(dptrace, sys.argv[1])(sys.argv[2])
dt = time.perf_counter() - t
print(json.dumps({"base_kb": base, "peak_kb": hwm(), "seconds": dt,
                  "rows": {k: len(v) for k, v in ds.items()}}))
"""


def best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def child(reader: str, folder: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, reader, str(folder)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def run(folder: Path, repeat: int) -> dict:
    import dptrace

    files = sorted(str(p) for p in folder.iterdir())
    size = sum(Path(f).stat().st_size for f in files)

    def cat() -> None:
        subprocess.run(["cat", *files], stdout=subprocess.DEVNULL, check=True)

    timings = {"cat": [], "load": [], "read_mpitrace": []}  # type: dict[str, list[float]]
    for _ in range(repeat):   # interleaved rounds: cat and dptrace see the same cache state
        timings["cat"].append(best(cat, 1))
        timings["load"].append(best(lambda: dptrace.load(folder), 1))
        timings["read_mpitrace"].append(best(lambda: dptrace.read_mpitrace(folder), 1))
    res = {"files": len(files), "input_mb": size / 1e6,
           **{f"{k}_s": min(v) for k, v in timings.items()}}
    for reader in ("load", "read_mpitrace"):
        res[f"{reader}_x_cat"] = res[f"{reader}_s"] / res["cat_s"]
        mem = child(reader, folder)
        res[f"{reader}_peak_rss_x_input"] = mem["peak_kb"] * 1024 / size
        res[f"{reader}_rss_growth_x_input"] = (mem["peak_kb"] - mem["base_kb"]) * 1024 / size
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
        res = run(folder, a.repeat)
    print(json.dumps(res, indent=2))
    for reader in ("load", "read_mpitrace"):
        print(f"{reader:>14}: {res[f'{reader}_s']:.3f} s = {res[f'{reader}_x_cat']:.1f}x cat "
              f"({res['cat_s']:.3f} s); peak RSS {res[f'{reader}_peak_rss_x_input']:.1f}x input "
              f"({res[f'{reader}_rss_growth_x_input']:.1f}x above the imported interpreter)")


if __name__ == "__main__":
    main()
