"""Thresholds: the shared ones, and the mechanism by which a user overrides any rule's.

Each format declares its rules' thresholds beside its rules (``dptrace/formats/<format>/
findings.py``: constants, and a :class:`Threshold` for each one a user may override,
registered with :func:`register_thresholds`). Here: the thresholds of kinds that several
formats produce (small Allreduces, large messages) and of the views that compare runs
(:mod:`.runs`), and :func:`parse_overrides`, which checks ``--threshold KIND=VALUE``
against every declared threshold (:func:`overridable`).

A threshold that an analysis module also applies is taken from it, so that a rule and the
table it reads can never disagree.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..analysis import messages as comm

#: mpitrace: Allreduces up to this size count as small (``analysis.messages.SMALL_BYTES``)
SMALL_BYTES: int = comm.SMALL_BYTES

#: mpitrace: flag a job when small Allreduces hold more than this share of its MPI time
#: (``analysis.messages.SMALL_SHARE``, the ``dominated`` column of ``small_messages``)
SMALL_SHARE: float = comm.SMALL_SHARE

#: mpitrace: ... and only when those Allreduces took at least this many seconds per rank:
#: mpitrace prints milliseconds, so a one-rank run's 0.001 s of local Allreduce copies is
#: "100%" of nothing (tests/fixtures/scaling/weak/n1). Real jobs that fire hold seconds
#: per rank (Theta knl32: 21 s)
SMALL_MIN_S_PER_RANK: float = 0.01

#: low_busbw: bins whose messages are all more than this many bytes are large
LARGE_BYTES: int = 1 << 20

# -- runs side by side (dptrace compare / dptrace scaling: :mod:`.runs`) --------------------

#: compare: the job throughput of the candidate this many percent below the base's is a
#: warning (below it, the change is reported as info). Repeated runs of one job on this
#: machine differ by under 1% (tests/fixtures/straggler: balanced .. balanced_4, 2,297 to
#: 2,317 images/s), a real regression by far more (the delayed rank: -35%)
THROUGHPUT_CHANGE_PCT: float = 5.0

#: compare: MPI (or Horovod collective) time per rank this many percent above the base's is
#: a warning. The balanced repeats differ by up to 10% (0.31-0.34 s); 25% is past that
COMM_CHANGE_PCT: float = 25.0

#: scaling: an efficiency below this (speedup over the ideal, as a fraction) is a warning.
#: 0.8 is the usual line of "scales well" in HPC scaling studies (weak scaling of
#: data-parallel training on a fast network reaches 0.9 and more)
SCALING_EFFICIENCY: float = 0.8


# -- overrides: `dptrace report --threshold KIND=VALUE`, `dptrace.findings(ds, thresholds=)` --

@dataclass(frozen=True)
class Threshold:
    """A rule's threshold a user may override: by the finding's ``kind``, in the unit of the
    findings table's ``threshold`` column (``scale`` turns it into the rule's argument
    ``param``: a % into a fraction)."""

    kind: str
    param: str
    default: float
    unit: str
    doc: str
    scale: float = 1.0

    def argument(self, value: float) -> float:
        return value * self.scale


_known: dict[str, Threshold] = {}


def register_thresholds(*thresholds: Threshold) -> None:
    """Declare thresholds a user may override (a kind declared again is replaced)."""
    for t in thresholds:
        _known[t.kind] = t


def overridable() -> dict[str, Threshold]:
    """Every threshold that can be overridden, by kind (what ``--threshold`` accepts): the
    shared ones and every format's (their ``findings`` modules are imported first)."""
    from .rules import rules

    rules()   # imports the formats' findings modules, which declare theirs
    return dict(sorted(_known.items()))


register_thresholds(
    Threshold("small_message_allreduce", "share", 100.0 * SMALL_SHARE, "%",
              f"Allreduces of at most {SMALL_BYTES} bytes holding more than this share of a "
              "job's MPI time", scale=0.01),
    Threshold("throughput_change", "drop_pct", THROUGHPUT_CHANGE_PCT, "%",
              "compare: the candidate's job throughput this far below the base's"),
    Threshold("comm_time_change", "grow_pct", COMM_CHANGE_PCT, "%",
              "compare: MPI (or Horovod collective) time per rank this far above the base's"),
    Threshold("scaling_efficiency", "floor", 100.0 * SCALING_EFFICIENCY, "%",
              "scaling: an efficiency (speedup over the ideal) below this", scale=0.01),
)


def parse_overrides(items: Iterable[str] | Mapping[str, float]) -> dict[str, float]:
    """``KIND=VALUE`` texts (or a mapping) checked against :func:`overridable`: the values by
    kind. Raises ValueError naming what is wrong and what is accepted."""
    pairs: list[tuple[str, object]] = []
    if isinstance(items, Mapping):
        pairs = [(str(k), v) for k, v in items.items()]
    else:
        for text in items:
            key, sep, given = str(text).partition("=")
            if not sep:
                raise ValueError(f"--threshold {text!r}: expected KIND=VALUE, e.g. "
                                 "throughput_straggler=10")
            pairs.append((key.strip(), given.strip()))
    if not pairs:
        return {}
    known = overridable()
    out: dict[str, float] = {}
    for kind, value in pairs:
        if kind not in known:
            raise ValueError(f"no threshold named {kind!r}; these can be set: "
                             + ", ".join(sorted(known)))
        try:
            number = float(value)  # type: ignore[arg-type]  # checked: any text or number
        except (TypeError, ValueError):
            raise ValueError(f"threshold {kind}={value!r} is not a number") from None
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"threshold {kind}={value!r} must be a finite number >= 0 "
                             f"({known[kind].unit})")
        out[kind] = number
    return out
