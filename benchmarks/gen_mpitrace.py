"""Generate the ``mpi_profile.<job>.<rank>`` files of one large mpitrace job, in the real format.

The layout and column widths copy the Polaris files in ``shared/realdata/mpitrace/``
(newer mpitrace: "Times from MPI_Init() to MPI_Finalize().", MiB, host and cpu columns,
"Summary for all tasks:"), and the message-size distributions copy the Theta Horovod job
``alcfws_theta_knl32/mpi_profile.19013.*`` (13-15 bins per collective, 8-byte Allreduce
negotiation). Rank 0 carries the job summary, the "Histogram of times spent in MPI" that
mpitrace prints above 32 ranks and the per-rank table of every rank. As with
``SAVE_ALL_TASKS=yes``, every rank writes its file.

    python benchmarks/gen_mpitrace.py OUTDIR [--ranks 4096] [--job 424242] [--seed 1]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path
from typing import Any

SEP_LONG = "-" * 71
SEP = "-" * 65
ROW = "{:<28} {:12d}    {:11.1f}   {:12.3f}\n"
BIN = "                    {:12d}   {:11.1f}   {:12.3f}\n"
# (avg bytes, calls) per bin: the Allreduce and Bcast bins of mpi_profile.19013.0
ALLREDUCE = [(4.0, 20), (8.0, 45773), (40.0, 124), (256.0, 16), (952.6, 43), (1536.0, 12),
             (7135.0, 124), (16384.0, 125), (163840.3, 125), (443061.7, 124),
             (2851875.8, 372), (16865650.7, 125), (67108864.0, 125)]
BCAST = [(4.0, 117), (25.0, 101), (40.0, 2), (256.0, 2), (283.7, 6), (867.2, 8), (1573.7, 3),
         (2121.0, 1), (6232.3, 3), (16384.0, 4), (163840.0, 2), (442368.0, 2),
         (2850816.0, 6), (16777216.0, 2), (67108864.0, 2)]
SMALL = {"MPI_Gather": [(4.0, 112)], "MPI_Allgather": [(4.0, 2)]}


def rank_stats(rng: random.Random, nranks: int) -> list[dict[str, Any]]:
    """Per-rank totals, like the Theta job's: comm 250-280 s of 318 s elapsed."""
    stats = []
    for r in range(nranks):
        node = r // 4
        stats.append({
            "comm": rng.uniform(250.0, 280.0), "elapsed": 317.922, "user": rng.uniform(4800, 5700),
            "system": rng.uniform(140, 160), "rss": rng.uniform(1140, 1180),
            "switches": rng.randint(240000, 300000), "host": f"x3210c0s{node % 40}b{node // 40}n0",
            "cpu": r % 4,
        })
    return stats


def bins_for(rng: random.Random, spec: list[tuple[float, int]], scale: float,
             ) -> list[tuple[int, float, float]]:
    out = []
    for avg, calls in spec:
        t = calls * (avg / 2.0e9 + 4.5e-3 * (avg <= 8)) * scale * rng.uniform(0.9, 1.1)
        out.append((calls, avg, t))
    return out


def rank_file(rng: random.Random, rank: int, nranks: int, st: dict, roles: dict[int, str],
              ) -> str:
    scale = st["comm"] / 251.3
    allreduce = bins_for(rng, ALLREDUCE, scale)
    bcast = bins_for(rng, BCAST, scale)
    small = {k: bins_for(rng, v, scale) for k, v in SMALL.items()}
    dists = {"MPI_Bcast": bcast, "MPI_Allreduce": allreduce, **small}
    # scale the bin times so the routine times add up to the rank's communication time
    raw = sum(b[2] for bins in dists.values() for b in bins)
    f = (st["comm"] - 0.007) / raw
    dists = {k: [(c, a, t * f) for c, a, t in v] for k, v in dists.items()}
    routines = [("MPI_Comm_rank", 5, 0.0, 0.0), ("MPI_Comm_size", 3, 0.0, 0.0)]
    for name, bins in dists.items():
        calls = sum(b[0] for b in bins)
        routines.append((name, calls, sum(b[0] * b[1] for b in bins) / calls,
                         sum(b[2] for b in bins)))
    routines.append(("MPI_Gatherv", 112, 0.0, 0.007))
    lines = [f"Data for MPI rank {rank} of {nranks}:\n",
             "Times from MPI_Init() to MPI_Finalize().\n", SEP_LONG + "\n",
             "MPI Routine                        #calls     avg. bytes      time(sec)\n",
             SEP_LONG + "\n"]
    lines += [ROW.format(*r) for r in routines]
    lines.append(SEP_LONG + "\n")
    if rank in roles:
        lines.append(f"MPI task {rank} of {nranks} had the {roles[rank]} communication time.\n")
    lines += [f"total communication time = {st['comm']:.3f} seconds.\n",
              f"total elapsed time       = {st['elapsed']:.3f} seconds.\n",
              f"user cpu time            = {st['user']:.3f} seconds.\n",
              f"system time              = {st['system']:.3f} seconds.\n",
              f"max resident set size    = {st['rss']:.3f} MiB.\n", "\n", SEP + "\n",
              "Message size distributions:\n", "\n"]
    for name, bins in dists.items():
        lines.append(f"{name:<22}    #calls    avg. bytes      time(sec)\n")
        lines += [BIN.format(*b) for b in bins]
        lines.append("\n")
    return "".join(lines)


def summary(stats: list[dict], order: list[int]) -> str:
    nranks = len(stats)
    lo, med, hi = order[0], order[(nranks - 1) // 2], order[-1]
    big_rss = max(range(nranks), key=lambda r: stats[r]["rss"])
    lines = [SEP + "\n", "\n", "Summary for all tasks:\n", "\n",
             f"  Rank {big_rss} reported the largest memory utilization : "
             f"{stats[big_rss]['rss']:.2f} MiB\n",
             f"  Rank 0 reported the largest elapsed time : {stats[0]['elapsed']:.2f} sec\n", "\n"]
    for word, r in (("minimum", lo), ("median ", med), ("maximum", hi)):
        lines.append(f"  {word} communication time = {stats[r]['comm']:.3f} sec for task {r}\n")
    lines.append("\n\n")
    if nranks > 32:
        lines += histogram([s["comm"] for s in stats])
    width = max(len(s["host"]) for s in stats)
    lines.append("MPI timing summary for all ranks:\n")
    lines.append(f"taskid {'host':>{width}}    cpu    comm(s)  elapsed(s)     user(s)   system(s)"
                 "   size(MiB)    switches\n")
    for r, s in enumerate(stats):
        lines.append(f"{r:6d} {s['host']:>{width}} {s['cpu']:6d} {s['comm']:10.2f}  "
                     f"{s['elapsed']:10.2f}  {s['user']:10.2f}  {s['system']:10.2f}  "
                     f"{s['rss']:10.2f}  {s['switches']:10d}\n")
    return "".join(lines)


def histogram(comm: list[float], bins: int = 15) -> list[str]:
    lo, hi = min(comm), max(comm)
    width = (hi - lo) / (bins - 1)
    counts = [0] * bins
    for c in comm:
        k = int((c - (lo - 0.5 * width)) / width) if width > 0 else 0
        if 0 <= k < bins:
            counts[k] += 1
    out = ["Histogram of times spent in MPI\n", "    time-bin    #ranks\n"]
    out += [f"{lo + i * width:12.3f}  {n:8d}\n" for i, n in enumerate(counts)]
    return out + ["\n\n"]


def generate(outdir: Path, nranks: int = 4096, job: int = 424242, seed: int = 1) -> list[Path]:
    """Write one job's files into ``outdir``; return their paths (rank order)."""
    rng = random.Random(seed)
    outdir.mkdir(parents=True, exist_ok=True)
    stats = rank_stats(rng, nranks)
    order = sorted(range(nranks), key=lambda r: stats[r]["comm"])
    roles = {order[0]: "minimum", order[(nranks - 1) // 2]: "median", order[-1]: "maximum"}
    paths = []
    for rank in range(nranks):
        text = rank_file(rng, rank, nranks, stats[rank], roles)
        if rank == 0:
            text += summary(stats, order)
        path = outdir / f"mpi_profile.{job}.{rank}"
        path.write_text(text)
        paths.append(path)
    return paths


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir", type=Path)
    p.add_argument("--ranks", type=int, default=4096)
    p.add_argument("--job", type=int, default=424242)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    paths = generate(a.outdir, a.ranks, a.job, a.seed)
    total = sum(x.stat().st_size for x in paths)
    print(f"wrote {len(paths)} files, {total / 1e6:.1f} MB, into {a.outdir}")


if __name__ == "__main__":
    main()
