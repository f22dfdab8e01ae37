"""``dptrace watch`` on a dense training log that grows at 1 MB/s: CPU per MB appended, the
share of one core, the refresh interval reached, and peak memory.

    python benchmarks/bench_watch.py [--seconds 600] [--rate-mb 1] [--interval 5] [--file PATH]

A dense log (``benchmarks/gen_trainlog.py``: 64 srun ranks, tqdm bars, DeepSpeed, HF and
Horovod lines among NCCL and framework noise, ~820 rows per MB) of ``seconds x rate`` MB is
generated first (in another process), then replayed into a watched file *compressed in
time*: the watch runs on a simulated clock, and each of its sleeps appends the bytes the
job would have written meanwhile (``--rate-mb`` MB per simulated second, in pieces that cut
lines and tqdm redraws). The watch's CPU time (``time.process_time`` around its polls and
snapshots; the appends are the writer's and are not counted) divided by the simulated
seconds of the job (until its last byte; the idle wait before the watch ends is not
counted) is the share of one core it would take on a log growing at that rate. Peak memory
is the process's resident set (``ru_maxrss``) and its growth over the replay.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MB = 1_000_000


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


class Replay:
    """The simulated clock and the writer: sleeping appends what the job writes meanwhile."""

    def __init__(self, src: Path, dst: Path, rate: float, seed: int = 0) -> None:
        self.src = open(src, "rb")  # noqa: SIM115
        self.size = src.stat().st_size
        self.dst = open(dst, "ab")  # noqa: SIM115
        self.rate, self.now, self.written = rate, 0.0, 0
        self.rng = random.Random(seed)
        self.write_s = 0.0
        #: the simulated time the last byte was written (the job's end)
        self.ended: float | None = None

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        s = max(s, 0.05)
        self.now += s
        t = time.process_time()
        want = min(self.size, int(self.now * self.rate)) - self.written
        while want > 0:   # pieces of random sizes: lines and redraws cut anywhere
            n = min(want, self.rng.randint(1, 256 << 10))
            self.dst.write(self.src.read(n))
            self.written += n
            want -= n
        self.dst.flush()
        if self.ended is None and self.written >= self.size:
            self.ended = self.now
        self.write_s += time.process_time() - t

    @property
    def done(self) -> bool:
        return self.written >= self.size


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=600.0, help="simulated seconds of job")
    ap.add_argument("--rate-mb", type=float, default=1.0)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--file", type=Path, help="a log to replay instead of a generated one")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    from dptrace.watch.run import Watch

    with tempfile.TemporaryDirectory(prefix="bench_watch_") as tmp:
        src = args.file
        if src is None:
            src = Path(tmp) / "slurm-4242.out"
            size_mb = args.seconds * args.rate_mb
            t = time.time()
            subprocess.run([sys.executable, str(ROOT / "gen_trainlog.py"), str(src),
                            "--size-mb", f"{size_mb:g}"], check=True,
                           stdout=subprocess.DEVNULL)
            print(f"generated {src.stat().st_size / MB:,.0f} MB in {time.time() - t:.0f} s")
        dst = Path(tmp) / "watched" / "slurm-4242.out"
        dst.parent.mkdir()
        replay = Replay(src, dst, args.rate_mb * MB)
        rss0 = rss_mb()
        w = Watch([str(dst.parent)], interval=args.interval, idle_exit=3 * args.interval,
                  clock=replay.clock, sleep=replay.sleep, poll_thread=False)
        cpu0, wall0 = time.process_time(), time.time()
        snaps = 0
        last_sim = 0.0
        marks = []
        for snap in w.snapshots():
            snaps += 1
            read = sum(f["read_bytes"] for f in snap.files)
            marks.append((replay.now, read, snap.cost_s, rss_mb(),
                          replay.now - last_sim))
            last_sim = replay.now
            if snap.final:
                break
        cpu = time.process_time() - cpu0 - replay.write_s
        print(f"(the watch's own count: {w.cpu_s:,.1f} CPU s)")
        wall = time.time() - wall0
        sim = replay.ended or replay.now   # the job's length: the idle end is not counted
        size = replay.written
        rows = sum(len(snap.dataset[k]) for k in snap.dataset.tables)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
        print(f"replayed {size / MB:,.0f} MB over {sim:,.0f} simulated s "
              f"({size / MB / sim:.2f} MB/s) in {wall:,.0f} s wall; {snaps} snapshots; "
              f"{rows:,} rows ({rows / (size / MB):,.0f} per MB)")
        print(f"watch CPU {cpu:,.1f} s: {cpu / (size / MB) * 1000:,.1f} ms per MB appended, "
              f"{cpu / sim:.1%} of one core at {args.rate_mb:g} MB/s")
        print(f"peak RSS {peak:,.0f} MB (at start {rss0:,.0f} MB; "
              f"{(peak - rss0) / (size / MB):,.2f} MB per MB read)")
        print("\n  sim s     MB read   snapshot CPU s   RSS MB   since last refresh (sim s)")
        step = max(1, len(marks) // 12)
        shown = marks[::step]
        for m in shown + ([marks[-1]] if shown[-1] is not marks[-1] else []):
            print(f"{m[0]:7.0f} {m[1] / MB:11.1f} {m[2]:16.3f} {m[3]:8.0f} {m[4]:12.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
