"""The section registry: each section declared once, found without a hand-kept list, drawn
and plotted through the references its spec names."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from rich.console import Console

import dptrace
from dptrace.dataset import Dataset
from dptrace.reports import fmt, html, model, registry, terminal
from dptrace.reports.registry import SectionSpec, register_section
from dptrace.reports.terminal.generic import draw_generic

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "data"


@pytest.fixture(scope="module")
def ds() -> Dataset:
    return dptrace.load(str(EXAMPLES))


@pytest.fixture
def extra_sections(monkeypatch):
    """Register sections for one test only: the built-in ones found first, then a copy of
    the registry that the test may add to."""
    registry.sections(None)   # every section module, the views' too (runs: compare, scaling)
    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))


def test_sections_in_report_order():
    assert [s.name for s in registry.sections()] == [
        "findings", "inputs", "throughput", "communication", "mpi_callsites", "message_sizes",
        "horovod", "nccl", "nccl_tests", "ds_comms", "torch_profile", "mllog", "tiles",
        "problems"]
    orders = [s.order for s in registry.sections()]
    assert orders == sorted(orders) and len(set(orders)) == len(orders)


#: the format each built-in section belongs to (None: no format's, in dptrace/reports/)
HOMES = {"findings": None, "inputs": None, "problems": None, "throughput": "trainlog",
         "communication": "mpitrace", "mpi_callsites": "mpip", "message_sizes": "mpitrace",
         "horovod": "horovod", "nccl": "nccl", "nccl_tests": "nccltests",
         "ds_comms": "dscomms", "torch_profile": "torchtrace", "mllog": "mllog",
         "tiles": "sntilestat"}


def test_every_reference_resolves_to_a_function():
    assert {s.name for s in registry.sections()} == set(HOMES)
    assert registry.UNAVAILABLE == {}
    for spec in registry.sections():
        assert spec.terminal is not None, spec.name   # every built-in section has a drawer
        for ref in (spec.terminal, spec.figures):
            if ref is not None:
                assert callable(registry.resolve(ref)), (spec.name, ref)
        # one home per format: a format's builder, drawer and figures sit in its package
        fmt_ = HOMES[spec.name]
        home = f"dptrace.formats.{fmt_}." if fmt_ else "dptrace.reports."
        assert spec.build.__module__ == home + "sections" + ("" if fmt_ else f".{spec.name}")
        assert isinstance(spec.terminal, str) and spec.terminal.startswith(
            home + "terminal" + (":" if fmt_ else ".")), spec.terminal
        if fmt_:
            assert spec.figures == f"dptrace.formats.{fmt_}.figures:{spec.figures.split(':')[1]}"
        else:
            assert spec.figures is None, spec.name


def test_a_bad_reference_says_what_it_wants():
    with pytest.raises(ValueError, match="module:function"):
        registry.resolve("dptrace.reports.fmt.human_bytes")
    with pytest.raises(TypeError, match="not callable"):
        registry.resolve("dptrace.reports.fmt:PLAIN_LIMIT")
    assert registry.resolve(fmt.human_bytes) is fmt.human_bytes


def test_section_titles_come_from_the_spec(ds):
    report = model.build(ds)
    for section in report.sections:
        spec = registry.section_spec(section.name)
        assert spec is not None and section.title == spec.title


def _build_extra(ds: Dataset, opts: Mapping[str, Any]) -> model.Section:
    return model.Section("extra", "Extra", "A section registered by a test.",
                         {"numbers": pd.DataFrame({"source": ["a/b.log"], "value": [1234.5]})},
                         figure_args={"scale": 2})


def _extra_figures(tables: dict[str, pd.DataFrame], scale: int) -> dict[str, Any]:
    import plotly.graph_objects as go

    return {"bar": go.Figure(go.Bar(y=tables["numbers"]["value"] * scale))}


def test_a_new_section_is_one_registration(ds, extra_sections):
    register_section(SectionSpec(
        "extra", "Extra", order=75, build=_build_extra, figures=_extra_figures,
        facts=lambda section: {"instances": "extra: 1 thing"}))
    report = model.build(ds)
    names = [s.name for s in report.sections]
    assert names.index("extra") == names.index("tiles") + 1
    # the JSON face: generic
    assert "extra" in report.to_json()
    # the terminal face: no drawer named, so the generic one
    out = io.StringIO()
    terminal.render(model.Report(ds, [report.section("extra")]),  # type: ignore[list-item]
                    Console(file=out, width=100, color_system=None))
    assert "numbers" in out.getvalue() and "1,234.50" in out.getvalue()
    # figures: the spec's function, with the tables and the builder's figure_args
    extra = report.section("extra")
    assert extra is not None and list(extra.figures) == ["bar"]
    assert list(extra.figures["bar"].data[0].y) == [2469.0]
    # HTML: the figure, and the header fact joined with the other sections' facts
    page = report.to_html()
    assert "data-figure='extra.bar'" in page
    assert "; tiles: 16 instance(s) in 1 listing(s); extra: 1 thing</td>" in page


def test_a_name_taken_by_another_module_is_refused(extra_sections):
    with pytest.raises(ValueError, match="already registered"):
        register_section(SectionSpec("tiles", "Tiles again", order=1, build=_build_extra))


def test_a_section_without_a_spec_is_drawn_generically(ds):
    section = model.Section("loose", "Loose", "", {"t": pd.DataFrame({"rank": [0, 1]})})
    assert registry.section_spec("loose") is None and section.figures == {}
    out = io.StringIO()
    Console(file=out, width=80, color_system=None).print(draw_generic(section))
    assert "rank" in out.getvalue()
    assert "Loose" in html.render(model.Report(ds, [section]))


def test_exit_code_has_one_rule(ds):
    from dptrace import cli, exitcodes

    assert not hasattr(cli, "exit_code")
    report = model.build(ds)
    assert report.exit_code == model.exit_code(ds) == exitcodes.EXIT_OK
    empty = Dataset({}, ds.sources.iloc[:0], ds.problems.iloc[:0])
    assert model.exit_code(empty) == exitcodes.EXIT_FAILURE


def test_public_names():
    assert dptrace.Report is model.Report and dptrace.Section is model.Section
    assert {"Report", "Section"} <= set(dptrace.__all__)


def test_the_compare_and_scaling_views_have_their_own_sections():
    """dptrace compare / scaling: findings, inputs and problems are shared with the report;
    compare and scaling belong to their view only, declared once in
    dptrace/reports/sections/runs.py with their drawers and figures."""
    assert [s.name for s in registry.sections("compare")] == [
        "findings", "inputs", "setup", "compare", "problems"]
    assert [s.name for s in registry.sections("scaling")] == [
        "findings", "inputs", "setup", "scaling", "problems"]
    assert {s.name for s in registry.sections(None)} == set(HOMES) | {"setup", "compare", "scaling"}
    for name in ("compare", "scaling"):
        spec = registry.section_spec(name)
        assert spec is not None and spec.views == (name,)
        assert spec.build.__module__ == "dptrace.reports.sections.runs"
        assert spec.terminal == f"dptrace.reports.terminal.runs:draw_{name}"
        assert spec.figures == f"dptrace.reports.runs_figures:{name}_figures"
        for ref in (spec.terminal, spec.figures):
            assert callable(registry.resolve(ref))
    with pytest.raises(ValueError, match="views"):
        registry.register_section(registry.SectionSpec(
            "x", "X", order=99, build=lambda ds, o: None, views=("nope",)))
