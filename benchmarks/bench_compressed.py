"""Compressed inputs: time and peak memory of a ``.gz`` input against the same input plain.

    python benchmarks/bench_compressed.py [--bomb-mb 1024] [--log-mb 2048]
                                          [--only bomb,log] [--dir DIR] [--keep]

Writes its inputs to a temporary directory (or ``--dir``), each plain and gzipped:

- ``bomb``: the gz event bomb of issue 30: a real PyTorch profiler trace
  (``tests/fixtures/torchtrace/one_step/rank0.pt.trace.json``, torch 2.13 gloo) whose
  ``traceEvents`` hold one of its real events (the ``gloo:all_reduce`` user annotation,
  its JSON without the profiler's indentation: 225 bytes) copied until the file is
  ``--bomb-mb`` MB; gzip shrinks it about 300x;
- ``log``: a training log of ``--log-mb`` MB made of a real one
  (``/work/shared/realdata/trainlog/megatron_ds_gpt3_125M_8gpu.log`` when there, else the
  fixture ``tests/fixtures/trainlog/megatron_ds_gpt3_125M_8gpu.log``) copied end to end.

Each input is read by ``dptrace.load(path)`` in a fresh process (imports excluded from the
time), plain and ``.gz`` in turn, in one run (so the ratios compare like with like on this
loaded machine; ``PYTHONPATH=DIR`` runs a copy of another version of dptrace, e.g. one
made by ``git archive REV dptrace | tar -x -C DIR``). Peak memory is the peak of the
summed PSS of the process and its children (forked workers' shared pages counted once),
sampled every 20 ms from /proc, the process's own ``ru_maxrss``, and the peak of the
part of that PSS that is not a file's pages (``Pss_Anon`` + ``Pss_Shmem``: memory the page
cache cannot take back; a mapped file's pages, plain or a decompressed temporary file on
disk, are in PSS, not here; "anonymous" below). Printed: seconds, peak MB and rows of
each, and the ratios ``.gz / plain`` of time and peak (goal of issue 32: the ``.gz`` peak
within the plain peak plus a bounded buffer).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "tests/fixtures/torchtrace/one_step/rank0.pt.trace.json"
LOGS = (Path("/work/shared/realdata/trainlog/megatron_ds_gpt3_125M_8gpu.log"),
        ROOT / "tests/fixtures/trainlog/megatron_ds_gpt3_125M_8gpu.log")

CHILD = """
import json, resource, sys, time
import dptrace, dptrace.loader, pandas
from dptrace.formats.torchtrace import read as _t
from dptrace.formats.trainlog import read as _l
print("ready", flush=True)
sys.stdin.readline()
t = time.perf_counter()
ds = dptrace.load(sys.argv[1])
dt = time.perf_counter() - t
src = ds.sources
rows = {k: len(ds[k]) for k in ds.tables if k not in ("sources", "problems", "runs")}
print(json.dumps({"seconds": dt, "rows": rows,
                  "status": [str(s) for s in src["status"]],
                  "problems": [str(m)[:200] for m in ds.problems["message"]][:5],
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}),
      flush=True)
"""


# --- inputs ---------------------------------------------------------------------------------

def _event(trace: bytes) -> bytes:
    """The text of the trace's gloo:all_reduce event, as the profiler wrote it."""
    at = trace.index(b'"name": "gloo:all_reduce"')
    start = trace.rindex(b"\n  {", 0, at) + 3
    end = trace.index(b"\n  }", at) + 4   # the event's closing brace, at its indent
    event = trace[start:end]
    json.loads(event)
    return event


def make_bomb(path: Path, size_mb: float) -> None:
    """The real trace with its events replaced by copies of one of them: ``path`` plain and
    ``path.gz``."""
    trace = TRACE.read_bytes()
    m = re.search(rb'"traceEvents"\s*:\s*\[\s*', trace)
    assert m
    close = trace.rindex(b"]", 0, trace.rindex(b'"traceName"'))
    head, tail = trace[:m.end()], trace[close:]
    event = json.dumps(json.loads(_event(trace)), separators=(",", ":")).encode()
    one = event + b",\n"   # 225 bytes
    copies = max(1, int(size_mb * 1e6 - len(head) - len(tail)) // len(one))
    block = one * 10_000
    _write_both(path, [head], block, copies // 10_000,
                [one * (copies % 10_000), event, b"\n", tail])


def make_log(path: Path, size_mb: float) -> None:
    """A real training log copied end to end to ``size_mb``: ``path`` plain and ``.gz``."""
    log = next(p for p in LOGS if p.exists()).read_bytes()
    if not log.endswith(b"\n"):
        log += b"\n"
    block = log * max(1, (64 << 20) // len(log))
    n, rest = divmod(int(size_mb * 1e6), len(block))
    _write_both(path, [], block, n, [log * (rest // len(log))])


def _write_both(path: Path, head: list[bytes], block: bytes, n: int,
                tail: list[bytes]) -> None:
    gz = Path(str(path) + ".gz")
    comp = zlib.compressobj(6, zlib.DEFLATED, 31)   # gzip framing
    with open(path, "wb") as plain, open(gz, "wb") as packed:
        def put(data: bytes) -> None:
            plain.write(data)
            packed.write(comp.compress(data))
        for part in head:
            put(part)
        for _ in range(n):
            put(block)
        for part in tail:
            put(part)
        packed.write(comp.flush())


# --- measuring ------------------------------------------------------------------------------

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


def _pss_kb(pids: list[int]) -> tuple[int, int]:
    """The summed PSS of ``pids`` and the part of it that is not a file's pages (anonymous
    and shared memory, which the page cache cannot take back), in KB."""
    pss = anon = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                    elif line.startswith(("Pss_Anon:", "Pss_Shmem:")):
                        anon += int(line.split()[1])
        except OSError:
            continue
    return pss, anon


def run(path: Path) -> dict:
    """``dptrace.load(path)`` in a fresh process: seconds, rows, peak summed PSS."""
    # run outside the repository: $PYTHONPATH (a copy of another version of dptrace, to
    # compare) then wins over the working tree's
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=path.parent)
    assert proc.stdin and proc.stdout
    proc.stdout.readline()
    base, base_anon = _pss_kb(_tree(proc.pid))
    peak = [base, base_anon]
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            pss, anon = _pss_kb(_tree(proc.pid))
            peak[0], peak[1] = max(peak[0], pss), max(peak[1], anon)
            time.sleep(0.02)

    sampler = threading.Thread(target=poll)
    sampler.start()
    proc.stdin.write("\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    done.set()
    sampler.join()
    proc.wait()
    mem = {"peak_mb": peak[0] / 1e3, "anon_mb": peak[1] / 1e3, "base_mb": base / 1e3}
    if not line:
        return {"seconds": float("nan"), "rows": {}, "status": ["crashed"], **mem,
                "maxrss_mb": float("nan")}
    res = json.loads(line)
    return {**res, **mem, "maxrss_mb": res["maxrss_kb"] / 1e3}


def compare(name: str, plain: Path, repeat: int = 1) -> dict:
    """Plain then ``.gz``, ``repeat`` times interleaved (this machine's load drifts over
    minutes): the best time of each, the memory of its first run."""
    gz = Path(str(plain) + ".gz")
    runs: dict[str, list[dict]] = {"plain": [], "gz": []}
    for _ in range(repeat):
        for kind, path in (("plain", plain), ("gz", gz)):
            runs[kind].append(run(path))
    res = {"input": name, "plain_mb": plain.stat().st_size / 1e6,
           "gz_mb": gz.stat().st_size / 1e6}
    for kind, rs in runs.items():
        res[kind] = {**rs[0], "seconds": min(r["seconds"] for r in rs),
                     "all_s": [round(r["seconds"], 1) for r in rs]}
    p, g = res["plain"], res["gz"]
    res["time_ratio"] = g["seconds"] / p["seconds"]
    res["peak_ratio"] = g["peak_mb"] / p["peak_mb"]
    res["peak_extra_mb"] = g["peak_mb"] - p["peak_mb"]
    res["anon_ratio"] = g["anon_mb"] / p["anon_mb"]
    res["same_rows"] = p["rows"] == g["rows"]
    return res


def report(res: dict) -> str:
    lines = [f"{res['input']}: {res['plain_mb']:.0f} MB plain, {res['gz_mb']:.1f} MB .gz"]
    for kind in ("plain", "gz"):
        r = res[kind]
        lines.append(f"  {kind:>5}: {r['seconds']:7.2f} s {r['all_s']}, "
                     f"peak {r['peak_mb']:6.0f} MB PSS, "
                     f"{r['anon_mb']:6.0f} MB anonymous (max RSS {r['maxrss_mb']:.0f} MB; "
                     f"imported {r['base_mb']:.0f} MB), status {','.join(r['status'])}, "
                     f"rows {r['rows']}")
    lines.append(f"  .gz / plain: time {res['time_ratio']:.2f}x, peak {res['peak_ratio']:.2f}x "
                 f"({res['peak_extra_mb']:+.0f} MB), anonymous {res['anon_ratio']:.2f}x; "
                 f"same rows: {res['same_rows']}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bomb-mb", type=float, default=1073.7)   # 1 GiB inflated
    p.add_argument("--log-mb", type=float, default=2000.0)
    p.add_argument("--only", default="bomb,log")
    p.add_argument("--dir", type=Path, help="where the inputs go (kept); default: a temporary "
                   "directory, removed at the end")
    p.add_argument("--json", action="store_true", help="print the results as JSON too")
    p.add_argument("--repeat", type=int, default=1, help="runs of each, interleaved (best "
                   "time; memory of the first)")
    a = p.parse_args()
    work = a.dir or Path(tempfile.mkdtemp(prefix="dptrace-bench-compressed-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        for what in a.only.split(","):
            if what == "bomb":
                path, make, size = (work / f"bomb_{a.bomb_mb:g}mb.pt.trace.json", make_bomb,
                                    a.bomb_mb)
            elif what == "log":
                path, make, size = work / f"train_{a.log_mb:g}mb.log", make_log, a.log_mb
            else:
                raise SystemExit(f"--only: {what!r} is not bomb or log")
            if not Path(str(path) + ".gz").exists():
                t = time.perf_counter()
                make(path, size)
                print(f"wrote {path} and .gz in {time.perf_counter() - t:.0f} s", flush=True)
            res = compare(what, path, a.repeat)
            if a.json:
                print(json.dumps(res, indent=1))
            print(report(res), flush=True)
    finally:
        if a.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
