"""The world size a training log's ``world_size`` rows state (formats/trainlog/facts.
_world_sizes, which finds each (run, size)'s first row at once) equals the rule read row by
row: per run the one positive whole value, named after its first row by line, else that
the logs disagree."""

from __future__ import annotations

import copy
import os
import random

import pandas as pd
import pytest

from dptrace import runs
from dptrace.formats.trainlog import facts


def _by_rows(rows, said):
    """The rule, one row at a time (the reference)."""
    if "rank" in said:
        said = said.sort_values("lineno", kind="stable")
    sizes, first = {}, {}
    pairs = zip(said["run"].astype(str), said["value"].astype("float64"), strict=True)
    for i, (r, v) in enumerate(pairs):
        if v == v and abs(v) != float("inf") and v > 0 and v.is_integer():
            sizes.setdefault(r, set()).add(int(v))
            first.setdefault((r, int(v)), i)
    for r, found in sizes.items():
        if len(found) == 1:
            size = next(iter(found))
            i = first[(r, size)]
            pat = str(said["pattern"].iloc[i])
            line = said["lineno"].iloc[i]
            where = (f"{os.path.basename(str(said['source'].iloc[i]))} line {int(line)}"
                     if pd.notna(line) else "training log")
            runs.set_world(rows[r], size,
                           f"{facts._world_size_from().get(pat, pat)} ({where})")
        elif rows[r]["world_size"] is None:
            rows[r]["world_size_from"] = ("training logs disagree ("
                                          + ", ".join(map(str, sorted(found))) + " ranks)")


@pytest.mark.parametrize("seed", range(60))
def test_equal_to_the_rule_row_by_row(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 80)
    names = [rng.choice(["r1", "r2", "r3"]) for _ in range(n)]
    said = pd.DataFrame({
        "run": pd.Categorical(names) if seed % 2 else names,
        "value": [rng.choice([8.0, 8.0, 16.0, 0.0, -4.0, 2.5, float("nan"), float("inf"),
                              1e20, 4.0]) for _ in range(n)],
        "pattern": [rng.choice(["hf_trainer", "deepspeed", "other"]) for _ in range(n)],
        "source": [rng.choice(["/a/slurm-1.out", "rank1.log"]) for _ in range(n)],
        "lineno": pd.array([rng.choice([None, *range(60)]) for _ in range(n)], dtype="Int64"),
    })
    if seed % 3:
        said["rank"] = rng.randint(0, 3)
    blank = {r: {"world_size": None, "world_size_from": None} for r in ("r1", "r2", "r3")}
    got, want = copy.deepcopy(blank), copy.deepcopy(blank)
    facts._world_sizes(got, said)
    _by_rows(want, said)
    assert got == want
