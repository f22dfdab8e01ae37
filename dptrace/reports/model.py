"""The report model: the sections built from a Dataset, and the Report that holds them.

Each section has a name, a title, a caption that says how to read it, and its data tables
(analysis results). The sections are declared once, as :class:`~dptrace.reports.registry.
SectionSpec` (builder, figure function, rich drawer): a format's in its package
(``dptrace/formats/<format>/sections.py``), the others in :mod:`dptrace.reports.sections`;
:func:`build` runs every registered builder and keeps the sections that have data. Every
face (terminal, JSON, HTML, notebook) renders the same model.

This module imports neither rich nor plotly: building a report and writing its JSON load
neither. Figures are made lazily, once, when ``section.figures`` is first read (by the HTML
writer or the notebook), by the figure function the section's spec names; the builder
passes what the figures need besides the tables (raw rows the tables summarise, options)
as ``figure_args``. Figure functions live in each format's ``figures.py`` (shared helpers in
:mod:`dptrace.reports.figures`) and never call ``.show()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analyses import Analyses
from ..dataset import Dataset
from ..exitcodes import EXIT_FAILURE, EXIT_OK, EXIT_PARTIAL
from . import registry
from .safe_text import visible, visible_frame

if TYPE_CHECKING:
    import plotly.graph_objects as go


@dataclass
class Section:
    """One part of the report: what it is called, how to read it, its tables and figures."""

    name: str
    title: str
    caption: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    #: keyword arguments of the section's figure function besides the tables: raw rows the
    #: tables summarise, options. Not tables: not in the JSON, the HTML tables or exports.
    figure_args: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _figures: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def figures(self) -> dict[str, go.Figure]:
        """Figures by name, made by the figure function of the section's spec on first use
        (empty without one).

        Figures are for people: they are drawn from a copy of the data whose strings have
        their control, bidi and zero-width characters made visible (:mod:`.safe_text`), so
        no name in a chart displays as another; the tables keep the data as read."""
        if self._figures is None:
            spec = registry.section_spec(self.name)
            self._figures = {} if spec is None or spec.figures is None else dict(
                registry.resolve(spec.figures)(
                    {k: visible_frame(df) for k, df in self.tables.items()},
                    **{k: _visible_arg(v) for k, v in self.figure_args.items()}))
        return self._figures


@dataclass
class Report:
    """All sections for one Dataset, in display order; the notebook face of dptrace.

    ``report.tables`` and ``report.figures`` flatten the sections' tables and figures as
    ``"<section>.<name>"``; ``to_html(path)`` and ``to_json()`` write the other faces.
    """

    dataset: Dataset
    sections: list[Section]
    #: which report this is (:data:`~dptrace.reports.registry.VIEWS`): ``report``,
    #: ``compare`` or ``scaling``
    view: str = "report"

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        return {f"{s.name}.{k}": df for s in self.sections for k, df in s.tables.items()}

    @property
    def figures(self) -> dict[str, go.Figure]:
        return {f"{s.name}.{k}": fig for s in self.sections for k, fig in s.figures.items()}

    @property
    def exit_code(self) -> int:
        """What the CLI would exit with: 0 all parsed, 1 something skipped, 3 nothing parsed."""
        return exit_code(self.dataset)

    # The faces are named, not imported: the model imports no face (a face imports the
    # model), and each is loaded only when asked for, like a section's drawer.

    def to_json(self) -> str:
        """The report as JSON (:mod:`dptrace.reports.json_report`)."""
        return registry.resolve("dptrace.reports.json_report:dumps")(self, self.exit_code)

    def to_html(self, path: str | None = None) -> str:
        """The self-contained HTML dashboard; written to ``path`` when given. Returns the HTML."""
        text: str = registry.resolve("dptrace.reports.html:render")(self)
        if path is not None:
            registry.resolve("dptrace.reports.html:write_text")(path, text)
        return text

    def _repr_html_(self) -> str:
        return str(registry.resolve("dptrace.reports.html:summary_html")(self))


def _visible_arg(value: Any) -> Any:
    """A figure argument as the figure may draw it: tables and text (run labels, names)
    with their control, bidi and zero-width characters made visible; lists and tuples of
    them too (a JSON engine such as orjson writes such characters raw into the page)."""
    if isinstance(value, pd.DataFrame):
        return visible_frame(value)
    if isinstance(value, str):
        return visible(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_visible_arg(v) for v in value)
    return value


def exit_code(ds: Dataset) -> int:
    """The one rule for the exit code (the CLI uses it): 0 every input parsed, 1 something
    skipped, 3 no input gave any data (:mod:`dptrace.exitcodes`)."""
    if not ds.tables:
        return EXIT_FAILURE
    return EXIT_PARTIAL if ds.skipped else EXIT_OK


def build(ds: Dataset, view: str = "report", **opts: object) -> Report:
    """Run every registered section builder of ``view`` on ``ds``, in report order; keep
    the sections that have data. ``opts`` reach every builder (``warmup``: the share of each
    instance's steps dropped as warm-up).

    The ``compare`` and ``scaling`` views are made from the ordinary report of ``ds`` (every
    run's tables, the ``run`` column telling them apart): it is built first and reaches
    their builders as ``opts["report"]``; ``opts["view"]`` names the view."""
    if view not in registry.VIEWS:
        raise ValueError(f"view {view!r} is not one of {registry.VIEWS}")
    return _build(ds, view, None, opts)


def _build(ds: Dataset, view: str, only: set[str] | None, opts: Mapping[str, Any]) -> Report:
    """:func:`build`, with only the sections named in ``only`` (None: all of the view)."""
    options: dict[str, Any] = {**opts, "view": view}
    if view != "report":
        # the views read the report tables the formats declare as compared (Measure):
        # only their sections are built, not the findings of every run nor the inputs
        from ..analysis.compare import measures

        needed = {m.table.split(".", 1)[0] for m in measures()}
        options["report"] = _build(ds, "report", needed, {
            k: v for k, v in opts.items() if k in ("warmup", "thresholds")})
    # one analysis context: the derived tables sections and rules share, computed once
    options["analyses"] = Analyses(ds, options)
    # the sections of the formats whose tables the Dataset holds (the others have no data)
    sections = [s for spec in registry.sections(view, ds.tables)
                if (only is None or spec.name in only)
                and (s := spec.build(ds, options)) is not None]
    return Report(ds, sections, view)
