"""Generate a realistic Horovod timeline of a given size, as Horovod's own writer lays it out.

The records copy ``horovod/common/timeline.cc`` and the real files in
``shared/realdata/horovod_timeline/``: one ``pid`` per tensor, named by a ``process_name``
record (plus ``process_sort_index``) written just before the tensor's first event; pid 0
carries ``start_time_since_epoch_in_micros``; ``ts`` in microseconds since the start.

Each training step of the simulated job (a ResNet-50-sized model: 161 float32 gradients,
``--ranks`` ranks on GPUs with NCCL) goes through Horovod's cycles: ``CYCLE_START``
markers, a ``NEGOTIATE_ALLREDUCE`` per tensor (with a tick per rank when the response
cache misses; rank ``--straggler`` is late), then fused responses of up to 64 MB:
``ALLREDUCE`` with ``QUEUE``, ``MEMCPY_IN_FUSION_BUFFER``, ``NCCL_ALLREDUCE``,
``MEMCPY_OUT_FUSION_BUFFER`` and an ``E`` carrying dtype and shape.

Layouts (``--layout``):
  packed  Horovod >= 0.20.1: each event is appended with ``,`` on the same line (only
          metadata records end a line), and the file ends with ``}]``.
  lines   Horovod <= 0.20.0: one record per line, each ending ``},``; the array is never
          closed.

    python benchmarks/gen_horovod.py OUT.json [--size-mb 1000] [--layout packed]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

FUSION_BYTES = 64 << 20
CYCLE_US = 5000
#: (name, shape) of a ResNet-50's gradients, in the order backprop makes them ready
_LAYERS = [("fc/bias", (1000,)), ("fc/kernel", (2048, 1000))] + [
    (f"conv{i}/{kind}", shape)
    for i in range(53, 0, -1)
    for kind, shape in (("bn_beta", (64 * (1 + i % 4),)), ("bn_gamma", (64 * (1 + i % 4),)),
                        ("kernel", (3, 3, 64 * (1 + i % 4), 64 * (1 + (i + 1) % 4))))
]


def tensors() -> list[tuple[str, tuple[int, ...]]]:
    return [(f"DistributedSGD_Allreduce/HorovodAllreduce_gradients_{n.replace('/', '_')}_0", s)
            for n, s in _LAYERS]


def _nbytes(shape: tuple[int, ...]) -> int:
    n = 4
    for d in shape:
        n *= d
    return n


class Writer:
    """Lays records out as Horovod's writer does; tracks pids and the bytes written."""

    def __init__(self, out: list[str], layout: str) -> None:
        self.out, self.layout, self.pids, self.size = out, layout, {}, 0  # type: ignore[var-annotated]
        self._emit('[\n{"name": "process_name", "ph": "M", "pid": 0, "args": '
                   '{"start_time_since_epoch_in_micros":1633449303945695}},\n'
                   '{"name": "process_sort_index", "ph": "M", "pid": 0, "args": '
                   '{"sort_index": 0}},\n')
        self.first = True

    def _emit(self, s: str) -> None:
        self.out.append(s)
        self.size += len(s)

    def _sep(self) -> None:
        if not self.first:
            self._emit(",\n" if self.layout == "lines" else ",")
        self.first = False

    def pid(self, tensor: str) -> int:
        pid = self.pids.get(tensor)
        if pid is None:
            pid = self.pids[tensor] = len(self.pids) + 1
            self._sep()
            self._emit(f'{{"name": "process_name", "ph": "M", "pid": {pid}, "args": '
                       f'{{"name": "{tensor}"}}}},\n{{"name": "process_sort_index", "ph": "M", '
                       f'"pid": {pid}, "args": {{"sort_index": {pid}}}}}')
        return pid

    def event(self, tensor: str, ph: str, name: str, ts: int, args: str = "") -> None:
        pid = self.pid(tensor)
        self._sep()
        head = f'{{"ph": "{ph}"' + (f', "name": "{name}"' if ph != "E" else "")
        tail = ', "dur": 0' if ph == "X" else ""
        tail += f', "args": {{{args}}}' if args else ""
        self._emit(f'{head}, "ts": {ts}, "pid": {pid}{tail}}}')

    def marker(self, ts: int) -> None:
        self._sep()
        self._emit(f'{{"ph": "i", "name": "CYCLE_START", "ts": {ts}, "s": "g"}}')

    def close(self) -> None:
        self._emit("]\n" if self.layout == "packed" else ",\n")


def step(w: Writer, rng: random.Random, t0: int, ranks: int, straggler: int, cached: float,
         ) -> int:
    """Write one training step starting at ``t0``; return the time it ends."""
    specs = tensors()
    t = t0
    ready = t0 + rng.randint(20_000, 40_000)  # forward pass
    pending: list[tuple[str, tuple[int, ...], int]] = []
    for name, shape in specs:
        ready += rng.randint(50, 400)
        pending.append((name, shape, ready))
    while pending:
        w.marker(t)
        batch = [p for p in pending if p[2] <= t] or [pending[0]]
        pending = pending[len(batch):]
        t = max(t, batch[-1][2])
        t = _negotiate(w, rng, batch, t, ranks, straggler, cached)
        t = _respond(w, rng, batch, t)
        t += rng.randint(CYCLE_US // 4, CYCLE_US)
    return t


def _negotiate(w: Writer, rng: random.Random, batch: list, t: int, ranks: int,
               straggler: int, cached: float) -> int:
    end = t
    for name, _shape, _ready in batch:
        w.event(name, "B", "NEGOTIATE_ALLREDUCE", t)
        t += rng.randint(1, 4)
        if rng.random() >= cached:
            order = sorted(range(ranks), key=lambda r: rng.random() + 2.0 * (r == straggler))
            for r in order:
                t += rng.randint(1, 30) + (rng.randint(200, 3000) if r == straggler else 0)
                w.event(name, "X", str(r), t)
        end = max(end, t)
    for name, _shape, _ready in batch:
        end += rng.randint(1, 3)
        w.event(name, "E", "", end)
    return end


def _respond(w: Writer, rng: random.Random, batch: list, t: int) -> int:
    groups: list[list] = [[]]
    size = 0
    for item in batch:
        if groups[-1] and size + _nbytes(item[1]) > FUSION_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += _nbytes(item[1])
    for group in groups:
        t = _fused_op(w, rng, group, t)
    return t


def _fused_op(w: Writer, rng: random.Random, group: list, t: int) -> int:
    nbytes = sum(_nbytes(s) for _, s, _ in group)
    for name, _s, _r in group:
        t += 1
        w.event(name, "B", "ALLREDUCE", t)
    acts = [("QUEUE", 5 + rng.randint(0, 50))]
    if len(group) > 1:
        acts.append(("MEMCPY_IN_FUSION_BUFFER", 5 + nbytes // 400_000))
    acts.append(("NCCL_ALLREDUCE", 20 + nbytes // 5_000 + rng.randint(0, 200)))
    if len(group) > 1:
        acts.append(("MEMCPY_OUT_FUSION_BUFFER", 5 + nbytes // 400_000))
    for act, dur in acts:
        for name, _s, _r in group:
            w.event(name, "B", act, t)
        t += dur
        for name, _s, _r in group:
            w.event(name, "E", "", t)
    for name, shape, _r in group:
        t += 1
        dims = ", ".join(str(d) for d in shape)
        w.event(name, "E", "", t, f'"dtype": "float32", "shape": "[{dims}]"')
    return t


def generate(path: Path, size_mb: float, layout: str = "packed", ranks: int = 8,
             seed: int = 1, cached: float = 0.5, straggler: int = 3) -> int:
    """Write a timeline of about ``size_mb`` MB to ``path``; return its size in bytes."""
    rng = random.Random(seed)
    target = int(size_mb * 1e6)
    with open(path, "w") as fh:
        out: list[str] = []
        w = Writer(out, layout)
        t = 1_000
        written = 0
        while written + w.size < target:
            t = step(w, rng, t, ranks, straggler, cached)
            fh.write("".join(out))
            written += w.size
            out.clear()
            w.size = 0
        w.close()
        fh.write("".join(out))
        written += w.size
    return written


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--size-mb", type=float, default=1000.0)
    p.add_argument("--layout", choices=("packed", "lines"), default="packed")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--cached", type=float, default=0.5,
                   help="share of negotiations without rank ticks (response cache hits)")
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    n = generate(a.out, a.size_mb, a.layout, a.ranks, a.seed, a.cached)
    print(f"wrote {a.out}: {n / 1e6:.1f} MB ({a.layout})")


if __name__ == "__main__":
    main()
