"""`dptrace --help`, `dptrace formats` and `dptrace schema` import no pandas, numpy, pyarrow
nor rich (issue 32): each runs in a fresh interpreter and names the heavy modules it loaded.
The schema's description (dptrace.schema, every format's tables module) is light; what needs
pandas (conform, STRING, the column helpers) is in dptrace.frames, given by dptrace.schema
on first use."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "pyarrow", "rich", "plotly")

RUN = """
import contextlib, io, json, sys
from dptrace.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main({args!r})
    except SystemExit as exc:   # --help
        code = exc.code
print(json.dumps({{"code": code, "out": out.getvalue(),
                   "heavy": sorted(m for m in {heavy!r} if m in sys.modules)}}))
"""


def _fresh(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["formats"], ["schema"], ["report", "--help"]])
def test_light_command_imports_no_heavy_library(args):
    got = _fresh(RUN.format(args=args, heavy=HEAVY))
    assert got["code"] == 0
    assert got["heavy"] == [], f"dptrace {' '.join(args)} imported {got['heavy']}"
    assert got["out"].strip()


def test_formats_lists_every_format_with_its_tables():
    got = _fresh(RUN.format(args=["formats"], heavy=HEAVY))
    from dptrace import registry

    for p in registry.parsers().values():
        assert f"{p.name}  tables: " in got["out"]
        assert p.description.split()[0] in got["out"]
    assert max(len(line) for line in got["out"].splitlines()) <= 80   # a pipe: 80 columns


def test_schema_lists_every_table_and_column():
    got = _fresh(RUN.format(args=["schema"], heavy=HEAVY))
    from dptrace import schema

    for t in schema.TABLES.values():
        assert f"### `{t.name}`" in got["out"]
        for c in t.loaded_columns:
            assert f"| `{c.name}` | {c.dtype} |" in got["out"]


def test_every_tables_module_is_light():
    from dptrace import formats

    mods = [f"{formats.module(n)}.tables" for n in formats.names()]
    code = ("import importlib, json, sys\n"
            f"for m in {mods!r}:\n    importlib.import_module(m)\n"
            "from dptrace import schema\nschema.markdown()\n"
            f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


def test_schema_gives_the_pandas_side_by_its_old_names():
    from dptrace import frames, schema

    defined = {name for name, value in vars(frames).items()
               if not name.startswith("__") and getattr(value, "__module__", frames.__name__)
               == frames.__name__ and not inspect.ismodule(value)
               and name not in ("TYPE_CHECKING", "annotations", "Any", "Table")}
    assert defined <= schema._FRAMES, defined - schema._FRAMES
    for name in schema._FRAMES:
        assert getattr(schema, name) is getattr(frames, name)
    from dptrace.schema import STRING, conform

    assert conform is frames.conform and STRING is frames.STRING
    with pytest.raises(AttributeError):
        schema.no_such_name  # noqa: B018
