"""What one ``dptrace watch`` refresh costs at a few sizes read of the dense log: CPU seconds
and the transient memory of the refresh, to show the slope per row.

    python benchmarks/bench_watch_refresh.py [--at 100,300,1000] [--file PATH]

The dense log (``benchmarks/gen_trainlog.py``, generated to ``--tmp`` unless ``--file``) is
appended to a watched file in 8 MB pieces, each followed by a poll of the follower (what
the watch's poller does; a simulated clock advances 8 s a piece: 1 MB/s). At each size of
``--at`` (MB), three refreshes (``Live.snapshot``, as the watch takes them):

1. one 8 MB before the size (it consolidates the finished chunks, and builds the ordinary
   findings when they are due: ``refresh + findings``, its CPU seconds);
2. one at the size (8 s later: the findings are not due after the first refresh of a
   large log): ``refresh``, its CPU seconds (``time.process_time``);
3. one 8 MB after it, under ``tracemalloc``: ``transient``, the peak of the allocations
   made during the refresh (numpy and pandas buffers are traced; pyarrow's are not), and
   that per row of the Dataset.

To measure another commit's code the same way: ``git archive COMMIT dptrace | tar -x -C
DIR`` and run this script with ``PYTHONPATH=DIR`` (the line printed first says which
package was imported). The machine's load average is printed beside each line.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent
MB = 1_000_000
PIECE = 8 << 20


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--at", default="100,300,1000", help="sizes read, MB")
    ap.add_argument("--file", type=Path, help="a log to append instead of a generated one")
    ap.add_argument("--tmp", default=None)
    args = ap.parse_args()
    import dptrace
    from dptrace.watch import snapshot as snap_mod
    from dptrace.watch.follow import Follower

    ats = [float(x) for x in args.at.split(",")]
    print(f"package: {os.path.dirname(dptrace.__file__)}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench_watch_refresh_", dir=args.tmp) as tmp:
        src_path = args.file
        if src_path is None:
            src_path = Path(tmp) / "dense.out"
            subprocess.run([sys.executable, str(ROOT / "gen_trainlog.py"), str(src_path),
                            "--size-mb", f"{max(ats) + 10:g}"], check=True,
                           stdout=subprocess.DEVNULL)
        watched = Path(tmp) / "watched"
        watched.mkdir()
        dst = watched / "slurm-4242.out"
        clock = [0.0]
        follower = Follower([str(watched)], clock=lambda: clock[0])
        live = snap_mod.Live()
        written = 0
        with open(src_path, "rb") as src, open(dst, "ab") as out:

            def feed(upto: float) -> None:
                nonlocal written
                while written < upto:
                    data = src.read(PIECE)
                    if not data:
                        return
                    out.write(data)
                    out.flush()
                    written += len(data)
                    clock[0] += PIECE / MB
                    follower.poll()

            def refresh(traced: bool = False) -> tuple[float, float, int]:
                gc.collect()
                if traced:
                    tracemalloc.start(1)
                cpu = time.process_time()
                snap = live.snapshot(follower, 0.0, now=clock[0])
                cpu = time.process_time() - cpu
                peak = tracemalloc.get_traced_memory()[1] / MB if traced else 0.0
                if traced:
                    tracemalloc.stop()
                # the training-log rows read (a refresh's Dataset is built only when the
                # findings are due: the rows are counted where they are kept)
                rows = sum(st.rows() for t in follower.tails.values()
                           for st in t.states.values() if hasattr(st, "rows"))
                del snap
                gc.collect()
                return cpu, peak, rows

            print(f"{'MB read':>8} {'rows':>9} {'refresh+findings s':>18} {'refresh s':>9} "
                  f"{'us/row':>6} {'transient MB':>12} {'B/row':>6} {'load':>5}", flush=True)
            for at in ats:
                feed(at * MB - PIECE)
                built, _, _ = refresh()
                feed(at * MB)
                cpu, _, rows = refresh()
                mb = written / MB
                feed(at * MB + PIECE)
                _, peak, rows_t = refresh(traced=True)
                print(f"{mb:8.0f} {rows:9,} {built:18.2f} {cpu:9.2f} "
                      f"{cpu / max(rows, 1) * 1e6:6.2f} {peak:12.0f} "
                      f"{peak * MB / max(rows_t, 1):6.0f} {os.getloadavg()[0]:5.1f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
