"""The compare and scaling views read the formats' tables through what the formats declare
(``Measure`` roles, ``Comm``, ``Wide``, ``Settings``, batches), never by their names: a new
format, or a plug-in, joins the views without editing them (issue 31)."""

import ast
from pathlib import Path

import pytest

from dptrace import formats, schema
from dptrace.analysis import compare as cmp

ROOT = Path(__file__).resolve().parents[1] / "dptrace"
#: the shared modules of the views: none names a format's table
VIEWS = ("analysis/compare.py", "analysis/scaling.py", "findings/runs.py",
         "reports/sections/runs.py")


def _format_names() -> set[str]:
    """Every compared report table, and every table a format registers (not the shared
    ``runs``, ``sources``, ``problems``, ``findings``)."""
    formats.import_parts("tables")
    shared = {"runs", "sources", "problems", "findings"}
    return ({m.table for m in cmp.measures()}
            | {name for name in schema.tables() if name not in shared})


def _strings(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docs = {id(n.body[0].value) for n in ast.walk(tree)
            if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef)) and n.body
            and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return {n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs}


@pytest.mark.parametrize("module", VIEWS)
def test_the_views_name_no_format_table(module):
    names = _format_names()
    assert "throughput.job" in names and "communication.jobs" in names and "nccl_setup" in names
    named = sorted(_strings(ROOT / module) & names)
    assert not named, f"{module} names format tables {named}: declare a role in the format"


def test_every_role_the_views_read_is_declared():
    assert cmp.with_role("job") is not None and cmp.with_role("instances") is not None
    assert [m.comm.source for m in cmp.comm_measures() if m.comm] == [
        "mpitrace", "horovod timeline"]
    assert "NCCL network" in cmp.network_settings()
    wide = {w.name for m in cmp.measures() for w in m.wide}
    assert {"ranks", "routines", "message_sizes", "horovod", "tiles"} <= wide
