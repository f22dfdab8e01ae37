"""PyTorch profiler traces: dptrace's load time and peak memory against a JSON parser.

    python benchmarks/bench_torchtrace.py [--size-mb 100] [--repeat 3] [--dir DIR]
                                          [--readers dptrace,orjson,msgspec]

Generates a trace with :mod:`gen_torchtrace` (a real A100 NCCL trace from Kineto, its
events repeated in time up to the size) unless ``--dir`` already holds it, then runs each
reader in a fresh process, in interleaved rounds (imports excluded from the timing:
dptrace's lazy ones, pandas and the format's modules, are made before the clock starts), with
the machinery of :mod:`bench_horovod`:

- ``dptrace``: ``dptrace.load(path)`` (format detected): ``torch_events`` and
  ``torch_traces``, built;
- ``orjson``: ``orjson.loads`` of the whole file (the baseline of issue 17);
- ``msgspec``: ``msgspec.json.decode`` of the whole file, untyped.

Times are the best of ``--repeat`` rounds; peak memory (summed PSS of the process and its
children, sampled every 20 ms) comes from one more, untimed run per reader, in MB and as a
multiple of the file size.
Targets (issue 17): dptrace within 1.0x the time of orjson.loads, peak <= 4x the file.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_horovod  # noqa: E402
import gen_torchtrace  # noqa: E402

#: dptrace's lazy imports (pandas, the format's modules) made before the clock starts, as
#: the baselines' are
CHILD = bench_horovod.CHILD_TEMPLATE.format(
    imports="import dptrace, dptrace.registry, dptrace.runs, dptrace.formats.torchtrace.read",
    fix="", rows='len(out["traceEvents"])')


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size-mb", type=float, default=100.0)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dir", type=Path, default=Path("/tmp/dptrace-bench-torchtrace"))
    p.add_argument("--readers", default="dptrace,orjson,msgspec")
    a = p.parse_args()
    a.dir.mkdir(parents=True, exist_ok=True)
    path = a.dir / f"trace_{a.size_mb:g}mb.pt.trace.json"
    if not path.exists():
        t = time.perf_counter()
        gen_torchtrace.generate(path, a.size_mb)
        print(f"generated {path} in {time.perf_counter() - t:.0f} s", flush=True)
    res = bench_horovod.bench(path, a.repeat, tuple(a.readers.split(",")), child=CHILD)
    print(json.dumps(res, indent=1))
    print(bench_horovod.report(res), flush=True)


if __name__ == "__main__":
    main()
