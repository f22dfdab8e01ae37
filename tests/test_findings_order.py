"""The findings table's order (``findings.frame``), sorted in Python, is the order pandas'
stable sort of the same keys gave (severity, cause/symptom place, kind, value largest first,
subject, evidence; missing values last): checked on random findings with ties, missing
values and every kind of place."""

from __future__ import annotations

import importlib
import random

import pandas as pd
import pytest

from dptrace.schema import SEVERITIES

F = importlib.import_module("dptrace.findings")   # the package (dptrace.findings is a function)
KINDS = [*F.CAUSES, *F.SYMPTOMS, "throughput_straggler", "mpi_straggler", "throughput_drift",
         "job_check_failed", "zz_other", "aa_other"]


def _pandas_order(findings: list) -> list[tuple]:
    """The order before: a frame sorted by pandas (the code this replaced)."""
    df = pd.DataFrame([{"severity": f.severity, "kind": f.kind, "value": f.value,
                        "subject": f.subject, "evidence": f.evidence, "i": i}
                       for i, f in enumerate(findings)])
    df = df.astype({"value": "float64"})
    order = df.assign(_sev=df["severity"].map({s: i for i, s in enumerate(SEVERITIES)}),
                      _place=df["kind"].map(F._place), _val=-df["value"])
    order = order.sort_values(["_sev", "_place", "kind", "_val", "subject", "evidence"],
                              kind="stable", na_position="last")
    return df.loc[order.index, "i"].tolist()


@pytest.mark.parametrize("seed", range(40))
def test_python_order_equals_pandas_order(seed: int) -> None:
    rng = random.Random(seed)
    values = [None, float("nan"), 0.0, -0.0, 1.5, 2, 3.25, -4.0, 1e9]
    texts = ["a", "b", "B", "run 1", "é", "", "t k=1", "t k=2; u j=x"]
    found = [F.Finding(severity=rng.choice(SEVERITIES), kind=rng.choice(KINDS),
                       scope=rng.choice(F.SCOPES), subject=rng.choice(texts), message=f"m{i}",
                       evidence=rng.choice(texts), value=rng.choice(values))
             for i in range(rng.randint(1, 30))]
    table = F.frame(found)
    assert [int(m[1:]) for m in table["message"].astype(str)] == _pandas_order(found)
