"""The ``--json`` report of every directory of ../shared/realdata and of examples/data,
compared with the recording in tests/golden (made by tests/golden/make_golden.py).

Every recorded section, table, row and value must come out again: numbers equal to 12
significant digits (pandas versions may differ in the last bit of a mean), everything
else exactly. New content is allowed: new sections (findings), new tables, new columns
(``run``, ``rank``). A restructuring passes this unchanged; a change of output that is
intended re-records the golden files and says so in its commit.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden"
ROOT = HERE.parent
REAL = ROOT.parent / "shared" / "realdata"

#: tables whose content moved into the findings section (issue 13): each of their rows must
#: be one finding of the same run whose message holds every number of the old detail text
MOVED_TO_FINDINGS: set[tuple[str, str]] = {("communication", "checks"), ("horovod", "warnings")}


def _names() -> list[str]:
    return sorted(p.name[: -len(".json.gz")] for p in GOLDEN.glob("*.json.gz"))


def _path(name: str) -> str:
    return "examples/data" if name == "examples_data" else f"../shared/realdata/{name}"


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)
    return a == b


def _diff(golden: dict, now: dict) -> list[str]:
    out: list[str] = []
    if golden["exit_code"] != now["exit_code"]:
        out.append(f"exit_code {golden['exit_code']} -> {now['exit_code']}")
    for sname, sec in golden["sections"].items():
        got = now["sections"].get(sname)
        if got is None:
            out.append(f"section {sname} missing")
            continue
        for key in ("title", "caption"):
            if sec[key] != got[key]:
                out.append(f"{sname}.{key}: {sec[key]!r} -> {got[key]!r}")
        for tname, rows in sec["tables"].items():
            if (sname, tname) in MOVED_TO_FINDINGS:
                continue
            new = got["tables"].get(tname)
            if new is None:
                out.append(f"table {sname}.{tname} missing")
                continue
            if len(rows) != len(new):
                out.append(f"{sname}.{tname}: {len(rows)} rows -> {len(new)}")
                continue
            for i, (old_row, new_row) in enumerate(zip(rows, new, strict=True)):
                for col, value in old_row.items():
                    if col not in new_row:
                        out.append(f"{sname}.{tname}: column {col} missing")
                        break
                    if not _same(value, new_row[col]):
                        out.append(f"{sname}.{tname}[{i}].{col}: {value!r} -> {new_row[col]!r}")
                if len(out) > 40:
                    return out
    return out


@pytest.mark.parametrize("name", _names())
def test_report_json_unchanged(name: str) -> None:
    if name != "examples_data" and not (REAL / name).is_dir():
        pytest.skip("shared/realdata is not beside the clone")
    import sys

    sys.path.insert(0, str(GOLDEN))
    try:
        from make_golden import report_dict
    finally:
        sys.path.remove(str(GOLDEN))
    with gzip.open(GOLDEN / f"{name}.json.gz", "rt", encoding="utf-8") as fh:
        golden = json.load(fh)
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        now = report_dict(_path(name))
    finally:
        os.chdir(cwd)
    problems = _diff(golden, now) + _moved(golden, now)
    assert not problems, f"{name}: the report changed:\n" + "\n".join(problems[:40])
    # inputs named by relative paths stay relative: a report must not depend on where the
    # clone sits (CI's clone is elsewhere; an absolute path here fails there, not here)
    where = str(ROOT.parent.resolve())
    leaked = sorted({s for s in _strings(now) if where in s})
    assert not leaked, f"{name}: absolute paths in the report: {leaked[:5]}"


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")


def _moved(golden: dict, now: dict) -> list[str]:
    """Every row of a table that moved into the findings is said by one finding."""
    out = []
    findings = now["sections"]["findings"]["tables"]["findings"]
    for sname, tname in sorted(MOVED_TO_FINDINGS):
        for row in golden["sections"].get(sname, {}).get("tables", {}).get(tname, []):
            detail = str(row.get("detail", ""))
            numbers = [n.replace(",", "") for n in _NUMBER.findall(detail)]
            said = [f for f in findings
                    if all(n in f["message"].replace(",", "") for n in numbers)]
            if not said:
                out.append(f"{sname}.{tname}: no finding says {detail!r}")
    return out


def test_every_realdata_directory_is_recorded() -> None:
    if not REAL.is_dir():
        pytest.skip("shared/realdata is not beside the clone")
    recorded = set(_names())
    missing = [d.name for d in REAL.iterdir() if d.is_dir() and d.name not in recorded]
    assert not missing, f"record these with tests/golden/make_golden.py: {missing}"
