"""Benchmark: dptrace on a long `watch sntilestat` capture vs `grep -c TILE` on the same file.

    python benchmarks/bench_sntilestat.py [--snapshots 10000] [--repeat 3]

Writes a capture of N snapshots of an SN30 node (64 tiles, escape codes, watch headers;
~75 MB at 10,000), then measures in one run, best of --repeat: `LC_ALL=C grep -c TILE`,
and dptrace.load() in a child process (wall time and peak RSS). Prints the ratio of the
two times and the peak RSS as a multiple of the file size. Target: <= 30x grep.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CMD = "/opt/sambaflow/apps/nlp/transformers_on_rdu/venv/b"
HEADER = "TILE                 %idle %exec %pload %aload %chkpt %quiesce    PID     USER COMMAND"


def screen(k: int) -> str:
    title = "Every 2.0s: sntilestat"
    secs = k * 2
    right = f"sn30-r1-h1: Mon Apr 17 {10 + secs // 3600 % 14:02d}:{secs // 60 % 60:02d}:" \
            f"{secs % 60:02d} 2023"
    lines = [title + " " * (120 - len(title) - len(right)) + right, "", HEADER]
    for x in range(4):
        for r in range(2):
            for t in range(8):
                path = f"/XRDU_{x}/RDU_{r}/TILE_{t}"
                if (x, r) == (3, 1) and k % 7 == 0:
                    lines.append(f"{path:<20} 100.0   0.0    0.0    0.0    0.0      0.0")
                    continue
                ex = 85.0 + (k * 7 + x * 5 + t) % 12 * 0.5
                lines.append(f"{path:<20} {99.6 - ex:5.1f} {ex:5.1f}    0.3    0.1    0.0      0.0"
                             f" {2750330 + x * 2 + r:>7}  vsastry {CMD}")
    return "\x1b[H\x1b[2J" + "\r\n".join(lines) + "\r\n"


def generate(path: Path, snapshots: int) -> None:
    with open(path, "w", encoding="ascii") as fh:
        for start in range(0, snapshots, 500):
            fh.write("".join(screen(k) for k in range(start, min(snapshots, start + 500))))


def best(cmd: list[str], repeat: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        t = time.perf_counter()
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        times.append(time.perf_counter() - t)
    return min(times), out.strip()


CHILD = """
import resource, sys, time, dptrace
t = time.perf_counter()
ds = dptrace.load(sys.argv[1], format="sntilestat")
el = time.perf_counter() - t
print(len(ds["tiles"]), el, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--snapshots", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", help="also write the numbers here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "watch_sntilestat.typescript"
        generate(path, args.snapshots)
        size = path.stat().st_size
        path.read_bytes()  # warm the page cache for both readers
        grep_s, count = best(["env", "LC_ALL=C", "grep", "-c", "TILE", str(path)], args.repeat)
        runs = [subprocess.run([sys.executable, "-c", CHILD, str(path)], check=True,
                               capture_output=True, text=True).stdout.split()
                for _ in range(args.repeat)]
        rows = int(runs[0][0])
        dp_s = min(float(r[1]) for r in runs)
        rss = max(int(r[2]) for r in runs)
    expected = args.snapshots * 64
    result = {
        "file_mb": size / 1e6, "snapshots": args.snapshots, "grep_s": grep_s,
        "dptrace_parse_s": dp_s, "ratio": dp_s / grep_s, "peak_rss_mb": rss / 1e6,
        "rss_over_size": rss / size, "rows": rows, "rows_expected": expected,
    }
    print(f"file: {size / 1e6:.1f} MB, {args.snapshots} snapshots x 64 tiles "
          f"(grep -c TILE: {count})")
    print(f"grep -c TILE     {grep_s:8.3f} s")
    print(f"dptrace (parse)  {dp_s:8.3f} s   ratio {dp_s / grep_s:5.1f}x  (target <= 30x)")
    print(f"peak RSS         {rss / 1e6:8.1f} MB  = {rss / size:.2f}x the file")
    print(f"rows             {rows} (expected {expected})")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))
    return 0 if rows == expected else 1


if __name__ == "__main__":
    sys.exit(main())
