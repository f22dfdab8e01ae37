"""Findings: what a reader should look at first, as one table.

Every check, warning and straggler rule of dptrace is a *rule* (:mod:`.rules`): a small pure
function from analysis tables to :class:`Finding` rows. :func:`build` runs every rule whose
tables ``ds`` has and returns the ``findings`` table of :mod:`dptrace.schema`, ordered by
severity, then causes before symptoms (a straggler before the waiting it causes), then kind,
then value (largest first: the furthest over its threshold leads).

Layering: findings import analysis and schema, never reports; the report's Findings section
(:mod:`.section`) and its terminal drawer (:mod:`.terminal`) are separate modules, so that
``dptrace.reports`` can import this package without a circle.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..schema import FINDINGS, SEVERITIES, conform

if TYPE_CHECKING:
    from ..analyses import Analyses
    from ..dataset import Dataset

__all__ = ["CAUSES", "FINDINGS", "SCOPES", "SEVERITIES", "SYMPTOMS", "Evidence", "Finding",
           "build", "ev", "frame"]

#: what a finding can be about
SCOPES = ("job", "rank", "instance", "tensor", "tile", "input")
#: kinds that are causes found from two tables or sources at once: within a severity they come
#: first (a straggler before the waiting it causes), in this order; the other kinds follow in
#: alphabetical order (the one-source stragglers among them)
CAUSES = ("cross_source_straggler", "compute_straggler")
#: kinds that are symptoms of a cause (waiting for a straggler shows as MPI time): within a
#: severity they come last
SYMPTOMS = ("small_message_allreduce", "comm_share_high", "low_busbw", "latency_bound_allreduce",
            "throughput_drift", "job_check_failed")


@dataclass(frozen=True)
class Evidence:
    """Where a finding's numbers are: a report table (``<section>.<table>``, or a Dataset
    table) and the values that pick its row (``job=19013, rank=0``)."""

    table: str
    key: tuple[tuple[str, Any], ...] = ()

    def text(self) -> str:
        """``'communication.ranks job=19013 rank=0'``: what the faces show."""
        return " ".join([self.table, *(f"{k}={v}" for k, v in self.key)])

    def key_dict(self) -> dict[str, Any]:
        """The key as plain JSON values (numpy numbers as Python's, missing as None)."""
        return {k: _plain(v) for k, v in self.key}


def ev(table: str, /, **key: Any) -> Evidence:
    """The evidence of a finding: ``ev("communication.ranks", job=job, rank=r)``."""
    return Evidence(table, tuple(key.items()))


def _plain(v: Any) -> Any:
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    return str(v)


def _rows_of(text: str) -> tuple[Evidence, ...]:
    """Evidence given as text (a plug-in's rule may): ``'table k=v k=v'``, several joined by
    '; ', each value up to the next space. dptrace's own rules give :class:`Evidence`."""
    out = []
    for piece in str(text).split("; "):
        table, _, rest = piece.strip().partition(" ")
        if table:
            pairs = (w.partition("=") for w in rest.split(" ") if "=" in w)
            out.append(Evidence(table, tuple((k, v) for k, _, v in pairs if k)))
    return tuple(out)


#: what a rule may give as a finding's evidence: one row, several (a finding merged from
#: several sources), or text (``'table k=v ...'``)
EvidenceArg = Evidence | tuple[Evidence, ...] | str


@dataclass(frozen=True)
class Finding:
    """One finding: a row of the ``findings`` table (see :data:`dptrace.schema.FINDINGS`).

    ``message`` is one plain sentence with its numbers and units; nothing in it is escaped
    (each face escapes for itself). ``value`` and ``threshold`` share the unit the message
    states.
    """

    severity: str
    kind: str
    scope: str
    subject: str
    message: str
    #: where its numbers are (:class:`Evidence`, or several); kept as the text the faces
    #: show, its rows in :attr:`rows`
    evidence: EvidenceArg
    hint: str = ""
    rank: int | None = None
    value: float | None = None
    threshold: float | None = None
    run: str | None = None
    #: not a column: how many ranks (or instances) the source of a straggler finding saw, so
    #: that the rule over findings merges only sources that describe jobs of one size
    world_size: int | None = None
    #: not a column: the job or file a straggler finding comes from (a run with two mpitrace
    #: jobs or two timelines cannot say which of them goes with another source)
    origin: str | None = None
    #: the evidence's rows (the ``evidence_table`` and ``evidence_key`` columns); made from
    #: ``evidence``
    rows: tuple[Evidence, ...] = ()

    def __post_init__(self) -> None:
        given = self.evidence
        if isinstance(given, Evidence):
            given = (given,)
        if isinstance(given, tuple):
            object.__setattr__(self, "rows", given)
            object.__setattr__(self, "evidence", "; ".join(e.text() for e in given))
        elif not self.rows:
            object.__setattr__(self, "rows", _rows_of(str(given)))
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity {self.severity!r} is not one of {SEVERITIES}")
        if self.scope not in SCOPES:
            raise ValueError(f"scope {self.scope!r} is not one of {SCOPES}")


#: symptoms whose message ends by naming the causes found in the same run and job
#: (:func:`point_to_causes`); small Allreduces name their straggler in their own message
POINTS_TO_CAUSES = frozenset({"comm_share_high", "throughput_drift", "job_check_failed",
                              "low_busbw"})
#: symptoms whose causes can only be stragglers (waiting inside a large collective lowers its
#: bandwidth; small Allreduces do not)
STRAGGLER_CAUSED = frozenset({"low_busbw"})


def is_cause(kind: str) -> bool:
    """A straggler (:data:`CAUSES`, any ``*_straggler`` kind) or small Allreduces (the
    waiting a straggler causes, and what makes a communication share high)."""
    return kind in CAUSES or kind.endswith("_straggler") or kind == "small_message_allreduce"


def _place(kind: str) -> int:
    """The order within a severity: :data:`CAUSES` in their order, then the one-source
    stragglers, then the other kinds, then :data:`SYMPTOMS` in their order (small
    Allreduces, then the communication share they make high, ...)."""
    if kind in CAUSES:
        return CAUSES.index(kind)
    if kind.endswith("_straggler"):
        return len(CAUSES)
    if kind in SYMPTOMS:
        return len(CAUSES) + 2 + SYMPTOMS.index(kind)
    return len(CAUSES) + 1


def point_to_causes(findings: list[Finding]) -> list[Finding]:
    """Each symptom's message ends by naming the causes found in the same run, so that a
    reader of one line knows where to look first."""
    causes: dict[str | None, list[Finding]] = {}
    for f in findings:
        if is_cause(f.kind):
            causes.setdefault(f.run, []).append(f)
    out = []
    for f in findings:
        found = causes.get(f.run, []) if f.kind in POINTS_TO_CAUSES else []
        if f.kind in STRAGGLER_CAUSED:
            found = [c for c in found if c.kind != "small_message_allreduce"]
        job = _job_of(f)
        if job is not None:   # a job's symptom: the causes found in that job
            found = [c for c in found if _job_of(c) in (job, None)]
        if found:
            found = sorted(found, key=lambda c: _place(c.kind))   # stable: stragglers first
            names = "; ".join(dict.fromkeys(f"{c.subject} ({c.kind})" for c in found))
            f = replace(f, message=f"{f.message} Likely cause, listed above: {names}.")
        out.append(f)
    return out


def _job_of(f: Finding) -> str | None:
    """The ``job`` of a finding's first evidence row, else None."""
    for e in f.rows[:1]:
        for k, v in e.key:
            if k == "job":
                return str(v)
    return None


def frame(findings: list[Finding]) -> pd.DataFrame:
    """``findings`` as the ``findings`` table: schema dtypes, ordered by severity, then causes
    first and symptoms last (:func:`_place`: :data:`CAUSES`, the other stragglers, the rest,
    :data:`SYMPTOMS`), then kind, then value (largest first; none last), then subject and
    evidence (so the order is stable)."""
    if not findings:   # (the empty table, made once: most runs have no finding)
        global _NONE
        if _NONE is None:
            _NONE = _frame([])
        return _NONE.copy()
    return _frame(findings)


#: :func:`frame` of no finding
_NONE: pd.DataFrame | None = None


def _frame(findings: list[Finding]) -> pd.DataFrame:
    cols = FINDINGS.names
    rows = [{**asdict(f), "evidence_table": "; ".join(e.table for e in f.rows),
             "evidence_key": json.dumps([e.key_dict() for e in f.rows])} for f in findings]
    rows.sort(key=_order_key)   # (stable: as pandas' stable sort of these keys, na last)
    df = pd.DataFrame(rows, columns=cols) if rows else pd.DataFrame({c: [] for c in cols})
    df = df.astype({"rank": "object", "value": "float64", "threshold": "float64"})
    out = conform(df, FINDINGS)
    out["severity"] = pd.Categorical(out["severity"].astype(object), categories=SEVERITIES)
    return out


_SEVERITY_ORDER = {s: i for i, s in enumerate(SEVERITIES)}


def _order_key(row: Mapping[str, Any]) -> tuple[tuple[bool, Any], ...]:
    """The findings table's order of a row (:func:`frame`): severity, :func:`_place`, kind,
    value largest first, subject, evidence; a missing value (None, NaN) after every other,
    as pandas' ``sort_values(na_position="last")`` puts it (one Python sort: pandas' took
    ~4 ms a report)."""
    value = row["value"]
    parts = (_SEVERITY_ORDER.get(row["severity"]), _place(row["kind"]), row["kind"],
             None if _missing(value) else -float(value), row["subject"], row["evidence"])
    return tuple((p is None, 0 if p is None else p) for p in parts)


def _missing(value: object) -> bool:
    if value is None:
        return True
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):   # (not a scalar)
        return False


def build(ds: Dataset | Analyses, **opts: Any) -> pd.DataFrame:
    """Run every rule on ``ds``; the ``findings`` table (empty, with its columns, when none
    fires). ``ds``: a Dataset, or a report's :class:`~dptrace.analyses.Analyses` (whose
    derived tables the rules then share with the sections). Options (with a Dataset):
    ``warmup`` (fraction of each instance's steps dropped before throughput is compared, as
    in the throughput section), ``thresholds`` (overrides by kind, in the unit of the
    ``threshold`` column: :func:`.thresholds.overridable`)."""
    from ..analyses import Analyses
    from .rules import run_rules

    a = ds if isinstance(ds, Analyses) else Analyses(ds, opts)
    ids = a.ds.run_ids
    # each run judged on its own rows: no rule mixes two runs
    found = [replace(f, run=run or None) for run, part in a.of_runs().items()
             for f in run_rules(part)]
    out = frame(point_to_causes(found))
    if ids:
        out["run"] = pd.Categorical(out["run"].astype(object), categories=ids)
    return out
