"""``dptrace watch`` on a dense training log that grows at 1 MB/s: CPU per MB appended, the
share of one core, the refresh interval reached, and memory along the replay.

    python benchmarks/bench_watch.py [--seconds 7200] [--rate-mb 1] [--interval 5]
                                     [--file PATH] [--every-mb 500]

A dense log (``benchmarks/gen_trainlog.py``: 64 srun ranks, tqdm bars, DeepSpeed, HF and
Horovod lines among NCCL and framework noise, ~745 rows per MB) of ``seconds x rate`` MB is
replayed into a watched file *compressed in time*: the watch runs on a simulated clock, and
each of its sleeps appends the bytes the job would have written meanwhile (``--rate-mb`` MB
per simulated second, in pieces that cut lines and tqdm redraws). The watch's CPU time
(``time.process_time`` around its polls and snapshots; the appends are the writer's and are
not counted) divided by the simulated seconds of the job (until its last byte; the idle wait
before the watch ends is not counted) is the share of one core it would take on a log
growing at that rate.

Disk: the log is not stored twice. The generator writes into a pipe the replay reads (so
the 7.2 GB of a 2-hour replay are never on disk as a source), and the bytes the watch has
read are punched out of the watched file (``fallocate(PUNCH_HOLE)``: the file keeps its size,
its blocks go; the first 16 MB, where detection looks, stay). The watch never reads bytes
again once fed unless it has to finish the whole file (a SambaFlow log without prefixes);
the benchmark checks that it did not (``incremental`` in the output).

Memory: every ``--every-mb`` MB read a line with the rows kept, the bytes of their finished
columns, the resident set after the last snapshot (its temporaries returned) and the peak
so far (``ru_maxrss``): the kept rows grow with the rows (the analysis reads them all: a
snapshot equals ``dptrace report`` on the bytes so far), the rest stays flat.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
MB = 1_000_000
#: the head of the watched file that is never punched (detection looks at its first bytes,
#: a companion's marker at the first 16 MB)
KEEP_HEAD = 16 << 20


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000


class Punch:
    """``fallocate(fd, PUNCH_HOLE | KEEP_SIZE, ...)``: the blocks of a range of a file go,
    its size stays (reads of the range give zeros)."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDWR)
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fn = libc.fallocate
        self.fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]
        self.done = KEEP_HEAD
        self.ok = True

    def upto(self, end: int) -> None:
        end -= end % 4096
        if not self.ok or end <= self.done:
            return
        if self.fn(self.fd, 0x01 | 0x02, self.done, end - self.done) != 0:
            self.ok = False   # a file system without holes: the file stays whole
            return
        self.done = end


class Replay:
    """The simulated clock and the writer: sleeping appends what the job writes meanwhile."""

    def __init__(self, src: Any, dst: Path, rate: float, seed: int = 0) -> None:
        self.src = src
        self.dst = open(dst, "ab")  # noqa: SIM115
        self.rate, self.now, self.written = rate, 0.0, 0
        self.rng = random.Random(seed)
        self.write_s = 0.0
        self.done = False
        #: the simulated time the last byte was written (the job's end)
        self.ended: float | None = None
        self.after_write: Any = None

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        s = max(s, 0.05)
        self.now += s
        t = time.process_time()
        want = int(self.now * self.rate) - self.written
        while want > 0 and not self.done:   # pieces of random sizes: lines, redraws cut
            n = min(want, self.rng.randint(1, 256 << 10))
            data = self.src.read(n)
            if not data:
                self.done = True
                break
            self.dst.write(data)
            self.written += len(data)
            want -= len(data)
        self.dst.flush()
        if self.done and self.ended is None:
            self.ended = self.now
        if self.after_write is not None:
            self.after_write()
        self.write_s += time.process_time() - t


def kept(w: Any) -> tuple[int, int, bool, int, int]:
    """Rows the watch's training-log readers keep, the bytes of their columns, whether
    every file is still finished part by part, the bytes of the throughput folds' arrays
    (values and steps, with their unused capacity) and the rows of the reduced tables a
    refresh assembles (pieces.TrainlogState.reps)."""
    rows = nbytes = fold = reps = 0
    incremental = True
    for tail in w.follower.tails.values():
        for state in tail.states.values():
            if not hasattr(state, "done"):
                continue
            incremental &= state.incremental
            rows += state.rows()
            for chunks in state.done.values():
                nbytes += sum(int(df.memory_usage(index=False, deep=True).sum())
                              for df in chunks)
            if getattr(state, "fold", None) is not None:
                for g in state.fold.groups.values():
                    fold += g.values.arr.nbytes + (g.steps.arr.nbytes if g.steps else 0)
            reps += sum(len(df) for chunks in getattr(state, "reps", {}).values()
                        for df in chunks)
    return rows, nbytes, incremental, fold, reps


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=7200.0, help="simulated seconds of job")
    ap.add_argument("--rate-mb", type=float, default=1.0)
    ap.add_argument("--interval", type=float, default=5.0)
    ap.add_argument("--file", type=Path, help="a log to replay instead of a generated one")
    ap.add_argument("--every-mb", type=float, default=0.0,
                    help="a memory line every this many MB read (default: 12 lines)")
    ap.add_argument("--no-punch", action="store_true", help="keep the watched file whole")
    ap.add_argument("--tmp", default=None, help="where the watched file goes")
    args = ap.parse_args()
    from dptrace.watch.run import Watch

    size_mb = args.seconds * args.rate_mb
    every = args.every_mb or max(1.0, size_mb / 12)
    with tempfile.TemporaryDirectory(prefix="bench_watch_", dir=args.tmp) as tmp:
        gen = None
        if args.file is None:
            fifo = Path(tmp) / "source.out"
            os.mkfifo(fifo)
            gen = subprocess.Popen([sys.executable, str(ROOT / "gen_trainlog.py"), str(fifo),
                                    "--size-mb", f"{size_mb:g}"], stdout=subprocess.DEVNULL)
            src = open(fifo, "rb")  # noqa: SIM115
        else:
            src = open(args.file, "rb")  # noqa: SIM115
        dst = Path(tmp) / "watched" / "slurm-4242.out"
        dst.parent.mkdir()
        replay = Replay(src, dst, args.rate_mb * MB)
        rss0 = rss_mb()
        w = Watch([str(dst.parent)], interval=args.interval, idle_exit=3 * args.interval,
                  clock=replay.clock, sleep=replay.sleep, poll_thread=False)
        punch = None if args.no_punch else Punch(dst)
        if punch is not None:
            def _punch() -> None:
                fed = min((t.offset for t in w.follower.tails.values()), default=0)
                punch.upto(fed)
            replay.after_write = _punch
        cpu0, wall0 = time.process_time(), time.time()
        snaps, snap_cpu, next_mark = 0, 0.0, every
        last_sim, last_cost, interval = 0.0, 0.0, 0.0
        print(f"{'sim s':>7} {'MB read':>9} {'rows kept':>10} {'kept MB':>8} "
              f"{'fold MB':>7} {'reps':>7} "
              f"{'RSS MB':>7} {'peak MB':>8} {'snap CPU s':>10} {'refresh s':>9} "
              f"{'ms/MB':>6} {'share':>6} {'folded':>6} {'wall s':>7} {'load':>5}", flush=True)

        def mark(read: float) -> None:
            rows, nbytes, _, fold, reps = kept(w)
            cpu = time.process_time() - cpu0 - replay.write_s   # the watch's, so far
            print(f"{replay.now:7.0f} {read / MB:9.0f} {rows:10,} {nbytes / MB:8.1f} "
                  f"{fold / MB:7.1f} {reps:7,} "
                  f"{rss_mb():7.0f} {peak_mb():8.0f} {last_cost:10.2f} {interval:9.0f} "
                  f"{cpu / max(read / MB, 1e-9) * 1000:6.0f} "
                  f"{cpu / max(replay.ended or replay.now, 1e-9):6.1%} "
                  f"{folds}/{snaps} {time.time() - wall0:7.0f} "
                  f"{os.getloadavg()[0]:5.1f}", flush=True)

        final = False
        built = 0   # refreshes that built the ordinary findings (Live.ordinary_due)
        folds = 0   # refreshes whose job figure came from the folds (Snapshot.folded)
        for snap in w.snapshots():
            snaps += 1
            folds += bool(getattr(snap, "folded", False))
            snap_cpu += snap.cost_s
            built += getattr(snap, "findings_elapsed_s", None) == snap.elapsed_s
            read = sum(f["read_bytes"] for f in snap.files)
            last_cost, interval, last_sim = snap.cost_s, replay.now - last_sim, replay.now
            final = snap.final
            del snap   # not held while the next one is made
            if read / MB >= next_mark or final:
                mark(read)
                while next_mark <= read / MB:
                    next_mark += every
            if final:
                break
        cpu = time.process_time() - cpu0 - replay.write_s
        wall = time.time() - wall0
        if gen is not None:
            gen.wait()
        sim = replay.ended or replay.now   # the job's length: the idle end is not counted
        size = replay.written
        rows, nbytes, incremental, fold, reps = kept(w)
        print(f"\nreplayed {size / MB:,.0f} MB over {sim:,.0f} simulated s "
              f"({size / MB / sim:.2f} MB/s) in {wall:,.0f} s wall (load {os.getloadavg()[0]:.1f}"
              f"); {snaps} snapshots ({built} built the ordinary findings, {folds} took the "
              f"job figure from the folds); fold {fold / MB:,.1f} MB "
              f"({fold / rows if rows else 0:.1f} bytes a row), {reps:,} rows reduced; "
              f"{rows:,} rows kept ({rows / (size / MB):,.0f} per MB, "
              f"{nbytes / rows if rows else 0:.0f} bytes each); finished part by part: "
              f"{incremental}; watched file punched: {punch is not None and punch.ok}")
        print(f"watch CPU {cpu:,.1f} s ({w.cpu_s:,.1f} by its own count; snapshots "
              f"{snap_cpu:,.1f} s, reading {w.cpu_s - snap_cpu:,.1f} s): "
              f"{cpu / (size / MB) * 1000:,.1f} ms per MB appended "
              f"(reading {(w.cpu_s - snap_cpu) / (size / MB) * 1000:,.1f} ms), "
              f"{cpu / sim:.1%} of one core at {args.rate_mb:g} MB/s")
        print(f"peak RSS {peak_mb():,.0f} MB (at start {rss0:,.0f} MB; "
              f"{(peak_mb() - rss0) / (size / MB) * 1000:,.0f} KB per MB read)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
