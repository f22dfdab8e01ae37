"""``dptrace watch``: follow a running job's outputs and say now what the report would say
at the end (docs/watch.md).

``dptrace.watch(paths, ...)`` is an iterator of :class:`Snapshot` for notebooks; the command
is :mod:`.command`. Reading is incremental (:mod:`.follow`, :mod:`.pieces`): each pass reads
only the bytes appended; each snapshot's Dataset equals ``dptrace.load`` of the bytes read
(:mod:`.snapshot`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from .snapshot import Snapshot

__all__ = ["Watch", "watch"]


def __getattr__(name: str) -> Any:
    if name == "Watch":
        from .run import Watch
        return Watch
    raise AttributeError(name)


def watch(paths: str | Sequence[str], *, interval: float = 5.0, idle_exit: float | None = None,
          baseline: str | None = None, warmup: float = 0.1, job_id: str | None = None,
          engine: str = "auto", datasets: float | None = None) -> Iterator[Snapshot]:
    """Snapshots of the inputs under ``paths`` (files, folders, globs) as they grow: one per
    ``interval`` seconds (more when the analysis costs more: at most about 10% of a core),
    until every input stopped growing for ``idle_exit`` seconds (never when None) or the
    Slurm job ``job_id`` left the queue; the last snapshot (``final``) reads the lines
    still without a newline as the files' ends, like ``dptrace report``.

    Each snapshot's ``dataset`` (the Dataset of what was read, equal to ``dptrace.load`` of
    those bytes) is built when the ordinary findings are, at the final snapshot, and
    ``datasets`` seconds after the last one (0: at every snapshot, which costs every row
    read; None: no more often); else it is None and the job figure comes from the
    training logs' folds (docs/watch.md, Cost)."""
    from .run import Watch

    w = Watch([paths] if isinstance(paths, str) else list(paths), interval=interval,
              idle_exit=idle_exit, baseline=baseline, warmup=warmup, job_id=job_id,
              engine=engine, datasets=datasets)
    return w.snapshots()
