"""Generate a PyTorch profiler (Kineto) trace of a given size from a real one.

The seed is a real trace written by Kineto (default: HolisticTraceAnalysis' A100 NCCL trace
``hta_trace_diff_control_rank3_ws8.json.gz`` in ``shared/realdata/torch_trace/``, rank 3 of
8, five ``ProfilerStep`` s of a training loop). Its metadata (``schemaVersion``,
``deviceProperties``, ``distributedInfo``, ...) is written once; its events array is written
as many times as the size asks, each copy shifted in time by the seed's span and its
``ProfilerStep#N`` renumbered, byte for byte in Kineto's own layout (one event per indented
block, ``},`` between). The result reads as one long profiling window of the same job.

    python benchmarks/gen_torchtrace.py OUT.json [--size-mb 100] [--seed PATH]
"""

from __future__ import annotations

import argparse
import gzip
import re
from pathlib import Path

SEED = (Path(__file__).resolve().parents[2] / "shared" / "realdata" / "torch_trace" /
        "hta_trace_diff_control_rank3_ws8.json.gz")
_START = re.compile(rb'"traceEvents"\s*:\s*\[\s*')
_END = re.compile(rb'\}\s*\]\s*(,\s*"|\}\s*\Z)')
_TS = re.compile(rb'("ts": )(\d+)')
_STEP = re.compile(rb'("name": "ProfilerStep#)(\d+)')


def _split(data: bytes) -> tuple[bytes, bytes, bytes]:
    """(metadata before the events, the events' text without the array brackets, the rest)."""
    start = _START.search(data)
    ends = list(_END.finditer(data, start.end())) if start else []
    if start is None or not ends:
        raise SystemExit("the seed is not a Kineto trace with a closed traceEvents array")
    end = ends[0] if ends[0].group(1).startswith(b",") else ends[-1]
    return data[:start.end()], data[start.end():end.start() + 1], data[end.start() + 1:]


def _shifted(events: bytes, shift: int, renumber: int) -> bytes:
    """The events, ``shift`` microseconds later and ``renumber`` steps on."""
    block = _TS.sub(lambda m: m.group(1) + str(int(m.group(2)) + shift).encode(), events)
    return _STEP.sub(lambda m: m.group(1) + str(int(m.group(2)) + renumber).encode(), block)


def generate(out: Path, size_mb: float, seed: Path = SEED) -> None:
    raw = seed.read_bytes()
    data = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
    head, events, tail = _split(data)
    stamps = [int(m.group(2)) for m in _TS.finditer(events)]
    span = max(stamps) - min(stamps) + 1000
    steps = [int(m.group(2)) for m in _STEP.finditer(events)]
    nsteps = (max(steps) - min(steps) + 1) if steps else 0
    target = int(size_mb * 1e6)
    with open(out, "wb") as fh:
        fh.write(head)
        written, copy = len(head) + len(tail), 0
        while True:
            if copy == 0:
                block = events
            else:
                block = _shifted(events, span * copy, nsteps * copy)
                fh.write(b",\n  ")
            fh.write(block)
            written += len(block) + 4
            copy += 1
            if written >= target:
                break
        fh.write(tail)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--size-mb", type=float, default=100.0)
    p.add_argument("--seed", type=Path, default=SEED)
    a = p.parse_args()
    generate(a.out, a.size_mb, a.seed)


if __name__ == "__main__":
    main()
