"""The shared vocabulary of message sizes, used by every format that times collectives
(mpitrace and mpiP, Horovod timelines, nccl-tests): what counts as a small message, the
collectives' bus-bandwidth factors, and mpitrace's power-of-two size bins (so that the
tables of several tools line up)."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: messages up to this size (bytes) count as small (Horovod negotiation is 8 bytes)
SMALL_BYTES = 64
#: flag a job when small Allreduces hold more than this share of its MPI time
SMALL_SHARE = 0.5

#: routine -> (size multiplier: 'n' when mpitrace logs one rank's block, bus-bandwidth factor)
#: factors from nccl-tests (doc/PERFORMANCE.md); the size is nccl-tests' buffer size.
COLLECTIVES: dict[str, tuple[str, str]] = {
    "MPI_Allreduce": ("1", "2(n-1)/n"),
    "MPI_Reduce_scatter": ("1", "(n-1)/n"),
    "MPI_Allgather": ("n", "(n-1)/n"),
    "MPI_Allgatherv": ("n", "(n-1)/n"),
    "MPI_Alltoall": ("n", "(n-1)/n"),
    "MPI_Alltoallv": ("n", "(n-1)/n"),
    "MPI_Bcast": ("1", "1"),
    "MPI_Reduce": ("1", "1"),
}


def factor(formula: str, n: float) -> float:
    """The value of one of :data:`COLLECTIVES`' formulas for ``n`` ranks (NaN without n)."""
    if not n or np.isnan(n):
        return np.nan
    return {"1": 1.0, "n": n, "2(n-1)/n": 2 * (n - 1) / n, "(n-1)/n": (n - 1) / n}[formula]


def size_bin(nbytes: pd.Series) -> pd.Series:
    """mpitrace's size bins: 0 bytes is bin 0, 1-4 bytes bin 1, and bin k >= 2 holds
    (2^k, 2^(k+1)] bytes (see docs/mpitrace.md), so both tools' tables line up."""
    b = nbytes.astype(float)
    b = b.where(np.isfinite(b))              # an infinite size has no bin
    k = np.ceil(np.log2(b.clip(lower=4))) - 1
    k = k.where(b > 4, np.where(b > 0, 1, 0))
    return k.where(b.notna()).astype("Int64")


def bin_bounds(k: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Inclusive (lo, hi) bytes of size bins: 0-0, 1-4, then 2^k + 1 .. 2^(k+1)."""
    kf = k.astype(float)
    hi = np.where(kf == 0, 0.0, np.where(kf == 1, 4.0, 2.0 ** (kf + 1)))
    lo = np.where(kf <= 1, kf, 2.0 ** kf + 1)
    return pd.Series(lo, index=k.index), pd.Series(hi, index=k.index)
