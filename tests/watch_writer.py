"""A writer process for the watch tests: replays real logs into files, as a running job
writes them, in pieces of random sizes at a controlled rate.

    python tests/watch_writer.py --seed 3 --rate 200000 --max-piece 6000 SRC DST [SRC DST ...]

Pieces cut lines and tqdm redraws anywhere: a quarter of the cuts fall within three bytes
of a ``\\r`` or a newline (a redraw's number cut mid-way, a line's end missing its newline).
Files are written round-robin; ``--stagger S`` starts file k only after k*S seconds (files
appearing in a watched folder); ``--stop DST:BYTES`` stops writing DST at the first line end
after BYTES and prints ``STOPPED <unix time> DST`` (a file written to its end: ``FINISHED
<unix time> DST``); ``--head BYTES`` writes a file's
first lines up to BYTES at once (a job's setup output, before the training lines). Prints ``DONE <unix time>`` at the end. Each piece is flushed (the watch reads what the disk has)."""

from __future__ import annotations

import argparse
import os
import random
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate", type=float, default=200_000.0, help="bytes per second, all files")
    p.add_argument("--max-piece", type=int, default=6000)
    p.add_argument("--stagger", type=float, default=0.0)
    p.add_argument("--stop", action="append", default=[])
    p.add_argument("--start-delay", type=float, default=0.0)
    p.add_argument("--head", type=int, default=0,
                   help="bytes of each file written at once when it appears (its setup)")
    p.add_argument("pairs", nargs="+")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    pairs = list(zip(args.pairs[::2], args.pairs[1::2], strict=True))
    stops = {d: int(n) for d, _, n in (s.rpartition(":") for s in args.stop)}
    data = [open(src, "rb").read() for src, _ in pairs]   # noqa: SIM115
    pos = [0] * len(pairs)
    handles: list = [None] * len(pairs)
    stopped: set[int] = set()
    time.sleep(args.start_delay)
    t0 = time.monotonic()
    while True:
        now = time.monotonic()
        for k in range(len(pairs)):   # a file appears when its time comes, even empty
            if handles[k] is None and now - t0 >= k * args.stagger:
                os.makedirs(os.path.dirname(pairs[k][1]) or ".", exist_ok=True)
                handles[k] = open(pairs[k][1], "ab")   # noqa: SIM115
                if args.head:
                    cut = data[k].rfind(b"\n", 0, args.head) + 1
                    handles[k].write(data[k][:cut])
                    handles[k].flush()
                    pos[k] = cut
        live = [k for k in range(len(pairs)) if pos[k] < len(data[k]) and k not in stopped
                and now - t0 >= k * args.stagger]
        if not live:
            if all(handles[k] is not None and (pos[k] >= len(data[k]) or k in stopped)
                   for k in range(len(pairs))):
                break
            time.sleep(0.01)
            continue
        k = live[rng.randrange(len(live))]
        dst = pairs[k][1]
        buf, at = data[k], pos[k]
        end = min(len(buf), at + rng.randint(1, args.max_piece))
        if rng.random() < 0.25 and end < len(buf):   # near a redraw or a line end
            hits = [i for i in (buf.rfind(b"\r", at, end), buf.rfind(b"\n", at, end)) if i > at]
            if hits:
                end = min(len(buf), max(at + 1, rng.choice(hits) + rng.randint(-3, 3)))
        limit = stops.get(dst)
        if limit is not None and end >= limit:
            nl = buf.find(b"\n", max(at, limit - 1))
            end = nl + 1 if nl >= 0 else len(buf)
            stopped.add(k)
        handles[k].write(buf[at:end])
        handles[k].flush()
        pos[k] = end
        if k in stopped:
            print(f"STOPPED {time.time():.3f} {dst}", flush=True)
        elif pos[k] >= len(buf):
            print(f"FINISHED {time.time():.3f} {dst}", flush=True)
        time.sleep((end - at) / args.rate)
    for h in handles:
        if h is not None:
            h.close()
    print(f"DONE {time.time():.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
