"""Horovod timeline: dptrace's load time and peak memory against a JSON parser, side by side.

    python benchmarks/bench_horovod.py [--size-mb 1000] [--layout packed|lines|both]
                                       [--repeat 3] [--dir DIR]

Generates a realistic timeline with :mod:`gen_horovod` (v0.20.1+ framing by default:
thousands of events per line), unless ``--dir`` already holds it, then runs, in
interleaved rounds so every reader sees the same page-cache state, each reader in a fresh
process (imports excluded from the timing):

- ``dptrace``: ``dptrace.load(path)`` (format detected), i.e. the hvd_* tables, built;
- ``orjson``: ``orjson.loads`` of the whole file (the baseline of issue 4);
- ``msgspec``: ``msgspec.json.decode`` of the whole file, untyped.

The per-line layout (Horovod <= 0.20.0) never closes its array, so the two baselines get
the bytes with a ``]`` appended (one copy, included in their time). Times are the best of
``--repeat`` rounds, beside the CPU time of the reader's process and its workers (on a
shared machine the wall time follows the other jobs). Peak memory comes from one more,
untimed run per reader: the peak of the summed PSS (proportional set size: pages shared
by forked workers counted once) of the reader's process and its children, sampled every
20 ms from /proc, in MB and as a multiple of the file size; it counts the imported
interpreter (pandas, pyarrow: ~60 MB) and the pages of results that forked workers ship
through shared memory.
Targets (issue 4, issue 32): dptrace within 1.0x the time of orjson.loads, peak <= 2x
the file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_horovod  # noqa: E402

#: the script each reader runs in its own process; {imports}: dptrace's imports made before
#: the clock starts, {fix}: what a baseline does to the bytes before parsing, {rows}: the
#: baseline's row count
CHILD_TEMPLATE = """
import json, resource, sys, time
def cpu():
    return sum(r.ru_utime + r.ru_stime for r in (resource.getrusage(resource.RUSAGE_SELF),
               resource.getrusage(resource.RUSAGE_CHILDREN)))
reader, path = sys.argv[1], sys.argv[2]
if reader == "dptrace":
    {imports}
    run = lambda: dptrace.load(path)
else:
    import orjson, msgspec
    parse = orjson.loads if reader == "orjson" else msgspec.json.decode
    def run():
        with open(path, "rb") as fh:
            data = fh.read()
{fix}
        return parse(data)
print("ready", flush=True)
sys.stdin.readline()
t, c = time.perf_counter(), cpu()
out = run()
dt, dc = time.perf_counter() - t, cpu() - c
rows = ({{k: len(v) for k, v in out.items()}} if reader == "dptrace" else {rows})
print(json.dumps({{"seconds": dt, "cpu_s": dc, "rows": rows}}), flush=True)
"""
#: a timeline of the per-line framing never closes its array: the baselines get a ']'
_CLOSE = ("        body = data.rstrip()\n"
          "        if not body.endswith(b']'):\n"
          "            data = body.rstrip(b',') + b']'")
#: dptrace's lazy imports (pandas, the registry, the format's modules) made before the clock
#: starts, as bench_torchtrace does: ``import dptrace`` alone imports no pandas, and the
#: load's first call did (0.4-1 s of every timed run before 2026-11-28)
CHILD = CHILD_TEMPLATE.format(
    imports="import dptrace, dptrace.registry, dptrace.runs, dptrace.formats.horovod.read",
    fix=_CLOSE, rows="len(out)")


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except OSError:
            continue
    return out


def _pss_kb(pids: list[int]) -> int:
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return total


def run_reader(reader: str, path: Path, sample: bool, child: str = CHILD) -> dict:
    """One run in a fresh process: seconds and rows, and (``sample``) the peak summed PSS.

    Reading PSS walks the page tables and slows the process it reads, so timed runs do
    not sample; memory comes from separate runs.
    """
    proc = subprocess.Popen([sys.executable, "-c", child, reader, str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout
    proc.stdout.readline()                      # imported: start sampling, then go
    base = _pss_kb(_tree(proc.pid))
    peak = [base]
    done = threading.Event()

    def poll() -> None:
        while sample and not done.is_set():
            peak[0] = max(peak[0], _pss_kb(_tree(proc.pid)))
            time.sleep(0.02)

    sampler = threading.Thread(target=poll)
    sampler.start()
    proc.stdin.write("\n")
    proc.stdin.flush()
    result = json.loads(proc.stdout.readline())
    done.set()
    sampler.join()
    proc.wait()
    return {**result, "peak_kb": peak[0], "base_kb": base}


def bench(path: Path, repeat: int, readers: tuple[str, ...], child: str = CHILD) -> dict:
    size = path.stat().st_size
    runs: dict[str, list[dict]] = {r: [] for r in readers}
    for _ in range(repeat):
        for reader in readers:
            runs[reader].append(run_reader(reader, path, sample=False, child=child))
    mem = {reader: run_reader(reader, path, sample=True, child=child) for reader in readers}
    res: dict = {"file": str(path), "size_mb": size / 1e6}
    for reader, rs in runs.items():
        res[reader] = {"best_s": min(r["seconds"] for r in rs),
                       "all_s": [round(r["seconds"], 2) for r in rs],
                       "best_cpu_s": min(r["cpu_s"] for r in rs),
                       "peak_mb": mem[reader]["peak_kb"] / 1e3,
                       "peak_x_file": mem[reader]["peak_kb"] * 1e3 / size,
                       "base_mb": mem[reader]["base_kb"] / 1e3,
                       "rows": rs[0]["rows"]}
    for reader in readers:
        base = res.get("orjson", {}).get("best_s")
        res[reader]["x_orjson_time"] = res[reader]["best_s"] / base if base else float("nan")
        base = res.get("orjson", {}).get("best_cpu_s")
        res[reader]["x_orjson_cpu"] = res[reader]["best_cpu_s"] / base if base else float("nan")
    return res


def report(res: dict) -> str:
    lines = [f"{res['file']}: {res['size_mb']:.0f} MB"]
    for reader in ("dptrace", "orjson", "msgspec"):
        if reader in res:
            r = res[reader]
            lines.append(f"  {reader:>8}: best {r['best_s']:6.2f} s ({r['x_orjson_time']:.2f}x "
                         f"orjson; runs {r['all_s']}; CPU {r['best_cpu_s']:.2f} s = "
                         f"{r['x_orjson_cpu']:.2f}x), peak {r['peak_mb']:7.0f} MB = "
                         f"{r['peak_x_file']:.2f}x the file (imported interpreter "
                         f"{r['base_mb']:.0f} MB)")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size-mb", type=float, default=1000.0)
    p.add_argument("--layout", choices=("packed", "lines", "both"), default="packed")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dir", type=Path, default=Path("/tmp/dptrace-bench-horovod"))
    p.add_argument("--readers", default="dptrace,orjson,msgspec")
    a = p.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    layouts = ("packed", "lines") if a.layout == "both" else (a.layout,)
    for layout in layouts:
        path = a.dir / f"timeline_{layout}_{a.size_mb:g}mb.json"
        if not path.exists():
            t = time.perf_counter()
            gen_horovod.generate(path, a.size_mb, layout)
            print(f"generated {path} in {time.perf_counter() - t:.0f} s", flush=True)
        res = bench(path, a.repeat, tuple(a.readers.split(",")))
        print(json.dumps(res, indent=1))
        print(report(res), flush=True)


if __name__ == "__main__":
    main()
