"""One home per format: a format's report sections live in its package.

The section registry finds ``dptrace/formats/<format>/sections.py`` of every format package
(no hand-kept list), so a new format is one new package: spec, tables, reader, and its
sections with their drawer and figures. A format without a ``sections`` module has no
section; one whose ``sections`` module fails to import costs only its own sections. Parsing
never imports the report (a format's spec, tables and read routes import nothing of
``dptrace.reports``).
"""

from __future__ import annotations

import ast
import io
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

import dptrace
from dptrace import formats, registry, schema
from dptrace.reports import registry as sections_registry
from dptrace.reports import terminal

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "data"

#: a whole format in files: what a contributor adds, and nothing else
PACKAGE = {
    "__init__.py": '''
        from dptrace.registry import Spec

        def sniff(source, head):
            return 0.99 if head.startswith(b"ZZSEC") else 0.0

        SPEC = Spec(name="zzsec", description="a format made in a test",
                    tables=("zzsec_rows",), sniff=sniff)
    ''',
    "tables.py": '''
        from dptrace.schema import SOURCE, Column, Table, register_table

        ZZ = register_table(Table("zzsec_rows", "test rows",
                                  (SOURCE, Column("n", "Int64", "a number"))), place=91)
    ''',
    "read.py": '''
        from dptrace import schema
        from dptrace.registry import ParseResult
        from .tables import ZZ

        def parse(source):
            n = len(source.read_all([]).splitlines())
            return ParseResult({"zzsec_rows": schema.conform({"source": [source.name],
                                                              "n": [n]}, ZZ)})
    ''',
    "sections.py": '''
        from dptrace.reports.model import Section
        from dptrace.reports.registry import SectionSpec, register_section

        def build(ds, opts):
            rows = ds["zzsec_rows"]
            if rows.empty:
                return None
            return Section(SPEC.name, SPEC.title, "Lines per zz file.",
                           {"lines": rows.rename(columns={"n": "lines"})})

        SPEC = register_section(SectionSpec(
            "zzsec", "ZZ lines", order=70, build=build,
            figures="dptrace.formats.zzsec.figures:zz_figures",
            terminal="dptrace.formats.zzsec.terminal:draw_zz"))
    ''',
    "terminal.py": '''
        from rich.text import Text

        def draw_zz(section, opts):
            return Text(f"zz drawer: {int(section.tables['lines']['lines'].sum())} lines")
    ''',
    "figures.py": '''
        import plotly.graph_objects as go

        def zz_figures(tables):
            return {"lines": go.Figure(go.Bar(y=tables["lines"]["lines"]))}
    ''',
}


def _install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
             files: dict[str, str]) -> None:
    """Put the format package ``name`` (``files``) under dptrace.formats, for one test: the
    format registry, the schema and the section registry find it as they find the others."""
    sections_registry.sections(None)   # every built-in section first, the views' too (a copy
    # of them is added to: a module first imported while the copy is in place registers there)
    pkg = tmp_path / name
    pkg.mkdir()
    for file, text in files.items():
        (pkg / file).write_text(textwrap.dedent(text).replace("zzsec", name))
    monkeypatch.setattr(formats, "__path__", [*formats.__path__, str(tmp_path)])
    monkeypatch.setattr(registry, "_PARSERS", {})
    monkeypatch.setattr(registry, "_LOADED", False)
    monkeypatch.setattr(registry, "_READERS", dict(registry._READERS))
    monkeypatch.setattr(registry, "UNAVAILABLE", dict(registry.UNAVAILABLE))
    monkeypatch.setattr(schema, "_FORMATS_LOADED", False)
    monkeypatch.setattr(sections_registry, "_SPECS", dict(sections_registry._SPECS))
    monkeypatch.setattr(sections_registry, "UNAVAILABLE", {})
    monkeypatch.setattr(sections_registry, "_DISCOVERED", False)
    for mod in [m for m in sys.modules if m.startswith(f"dptrace.formats.{name}")]:
        monkeypatch.delitem(sys.modules, mod)


@pytest.fixture
def cleanup() -> Iterator[None]:
    """Drop what the test formats registered into the schema, and their modules."""
    yield
    for table in ("zzsec_rows", "zznone_rows", "zzbad_rows"):
        schema._TABLES.pop(table, None)
        schema._PLACES.pop(table, None)
    for mod in [m for m in sys.modules if m.startswith(("dptrace.formats.zzsec",
                                                       "dptrace.formats.zznone",
                                                       "dptrace.formats.zzbad"))]:
        del sys.modules[mod]


def test_a_new_format_brings_its_sections_in_its_package(tmp_path, monkeypatch, cleanup):
    _install(tmp_path, monkeypatch, "zzsec", PACKAGE)
    data = tmp_path / "input.zz"
    data.write_bytes(b"ZZSEC\n1\n2\n3\n")
    ds = dptrace.load(data)
    assert ds.sources["format"].tolist() == ["zzsec"]
    # parsing imported the format's reader, not its report modules
    assert "dptrace.formats.zzsec.read" in sys.modules
    assert not any(f"dptrace.formats.zzsec.{m}" in sys.modules
                   for m in ("sections", "terminal", "figures"))

    report = dptrace.report(ds)
    names = [s.name for s in report.sections]
    assert names.index("zzsec") == names.index("inputs") + 1   # order 70: after inputs (10)
    spec = sections_registry.section_spec("zzsec")
    assert spec is not None and spec.build.__module__ == "dptrace.formats.zzsec.sections"
    assert sections_registry.UNAVAILABLE == {}
    # JSON: the section and its table
    doc = json.loads(report.to_json())
    assert doc["sections"]["zzsec"]["title"] == "ZZ lines"
    [row] = doc["sections"]["zzsec"]["tables"]["lines"]
    assert row["source"] == str(data) and row["lines"] == 4
    assert "dptrace.formats.zzsec.figures" not in sys.modules   # figures: only when asked
    # terminal: the drawer the spec names, from the format's package
    out = io.StringIO()
    terminal.render(report, Console(file=out, width=100, color_system=None))
    assert "zz drawer: 4 lines" in out.getvalue()
    # HTML: the format's figure function
    assert "data-figure='zzsec.lines'" in report.to_html()


def test_a_format_without_a_sections_module_has_no_section(tmp_path, monkeypatch, cleanup):
    files = {k: v for k, v in PACKAGE.items() if k in ("__init__.py", "tables.py", "read.py")}
    _install(tmp_path, monkeypatch, "zznone", files)
    data = tmp_path / "input.zz"
    data.write_bytes(b"ZZNONE\n1\n")
    report = dptrace.report(dptrace.load(data))
    assert "zznone" in registry.parsers()
    assert [s.name for s in report.sections] == ["findings", "inputs"]
    assert sections_registry.UNAVAILABLE == {}   # no sections module is not an error


@pytest.mark.parametrize("broken", [
    # fails at import, after registering one section of two
    'SPEC = register_section(SectionSpec("zzbad", "ZZ", order=70, build=build))\n'
    'raise RuntimeError("the zz section module is broken")\n',
    # imports a module that is not installed
    "import zz_not_installed_anywhere\n",
    # takes the name of another format's section
    'register_section(SectionSpec("tiles", "Tiles again", order=70, build=build))\n',
])
def test_a_broken_sections_module_costs_only_its_format(tmp_path, monkeypatch, cleanup,
                                                        broken):
    files = dict(PACKAGE, **{"sections.py": textwrap.dedent('''
        from dptrace.reports.registry import SectionSpec, register_section

        def build(ds, opts):
            return None

    ''') + broken})
    _install(tmp_path, monkeypatch, "zzbad", files)
    data = tmp_path / "input.zz"
    data.write_bytes(b"ZZBAD\n1\n")
    ds = dptrace.load([data, EXAMPLES / "ug_sn30_multinode_from_docs.md"])
    report = dptrace.report(ds)   # no error, nothing printed
    names = [s.name for s in report.sections]
    assert "zzbad" not in names and "tiles" in names and "inputs" in names
    assert sections_registry.section_spec("zzbad") is None   # its half-registration dropped
    assert sections_registry.section_spec("tiles").build.__module__ == (  # type: ignore[union-attr]
        "dptrace.formats.sntilestat.sections")
    error = sections_registry.UNAVAILABLE["dptrace.formats.zzbad.sections"]
    assert any(word in error for word in ("broken", "zz_not_installed_anywhere",
                                          "already registered")), error
    assert set(sections_registry.UNAVAILABLE) == {"dptrace.formats.zzbad.sections"}
    assert json.loads(report.to_json())["sections"]["tiles"]["tables"]["overview"]


#: a format package's modules that belong to the report; the others parse
REPORT_MODULES = ("sections", "terminal", "figures", "compare")   # the report side


def _imports(path: Path, package: str) -> set[str]:
    """Every module ``path`` imports (relative imports resolved against ``package``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def test_parsing_imports_nothing_of_the_report():
    """A format's spec, tables and parse routes never import its report modules nor
    anything of dptrace.reports: parsing does not pay for the report."""
    checked = 0
    for name in formats.names():
        package = f"dptrace.formats.{name}"
        for path in sorted((ROOT / "dptrace" / "formats" / name).glob("*.py")):
            if path.stem in REPORT_MODULES:
                continue
            bad = sorted(m for m in _imports(path, package)
                         if m.startswith("dptrace.reports")
                         or any(m == f"{package}.{r}" for r in REPORT_MODULES))
            assert not bad, f"{path.relative_to(ROOT)} imports {bad}"
            checked += 1
    assert checked > 10
    code = textwrap.dedent(f"""
        import sys
        import dptrace
        ds = dptrace.load({str(EXAMPLES)!r})
        assert len(set(ds.sources["format"])) >= 3
        print(sorted(m for m in sys.modules if m.startswith("dptrace.reports")
                     or m.rsplit(".", 1)[-1] in {REPORT_MODULES!r}))
    """)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.strip() == "[]"


def test_every_format_with_sections_has_them_at_home():
    """Each built-in format's sections, drawers and figures are in its own package."""
    homes = {spec.build.__module__ for spec in sections_registry.sections()}
    for name in formats.names():
        assert f"dptrace.formats.{name}.sections" in homes
        for part in ("sections", "terminal", "figures"):   # (compare.py only where compared)
            assert (ROOT / "dptrace" / "formats" / name / f"{part}.py").exists()
