"""The report model: a declarative list of sections built from a Dataset.

Each section has a name, a title, a caption that says how to read it, its data
tables (analysis results) and, optionally, a figure function. Every face (terminal,
JSON, HTML, notebook) renders the same model; a section appears only when its data exists.

Figures hook: a section function passes ``figure_fn=`` to :class:`Section`: a callable
``(section) -> dict[str, go.Figure]`` (use ``functools.partial`` when the figures need raw
rows the tables summarise). It is called lazily, once, when ``section.figures`` is first
read (by the HTML writer or the notebook), so the terminal and JSON faces never pay for
plotly. Figure functions live in ``reports/figures*.py`` and never call ``.show()``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..analysis import throughput as thr
from ..dataset import Dataset
from .safe_text import visible, visible_frame

if TYPE_CHECKING:
    import plotly.graph_objects as go

#: a section's figure function: the section in, figures by name out
FigureFn = Callable[["Section"], "dict[str, go.Figure]"]


@dataclass
class Section:
    """One part of the report: what it is called, how to read it, its tables and figures."""

    name: str
    title: str
    caption: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figure_fn: FigureFn | None = field(default=None, repr=False, compare=False)
    _figures: dict[str, Any] | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def figures(self) -> dict[str, go.Figure]:
        """Figures by name, made by ``figure_fn`` on first use (empty without one).

        Figures are for people: they are drawn from a copy of the data whose strings have
        their control, bidi and zero-width characters made visible (:mod:`.safe_text`), so
        no name in a chart displays as another; the tables keep the data as read."""
        if self._figures is None:
            self._figures = dict(self._display_figures()) if self.figure_fn else {}
        return self._figures

    def _display_figures(self) -> dict[str, Any]:
        fn = self.figure_fn
        assert fn is not None
        if isinstance(fn, partial):   # DataFrames bound to the figure function: made safe too
            fn = partial(fn.func, *fn.args, **{
                k: visible_frame(v) if isinstance(v, pd.DataFrame) else v
                for k, v in fn.keywords.items()})
        safe = Section(self.name, visible(self.title), visible(self.caption),
                       {k: visible_frame(df) for k, df in self.tables.items()})
        return fn(safe)


@dataclass
class Report:
    """All sections for one Dataset, in display order; the notebook face of dptrace.

    ``report.tables`` and ``report.figures`` flatten the sections' tables and figures as
    ``"<section>.<name>"``; ``to_html(path)`` and ``to_json()`` write the other faces.
    """

    dataset: Dataset
    sections: list[Section]

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

    def to_json(self) -> str:
        from .json_report import dumps

        return dumps(self, self.exit_code)

    def to_html(self, path: str | None = None) -> str:
        """The self-contained HTML dashboard; written to ``path`` when given. Returns the HTML."""
        from . import html

        text = html.render(self)
        if path is not None:
            html.write_text(path, text)
        return text

    def _repr_html_(self) -> str:
        from .html import summary_html

        return summary_html(self)


def exit_code(ds: Dataset) -> int:
    """0 every input parsed, 1 something skipped, 3 no input gave any data."""
    if not ds.tables:
        return 3
    return 1 if ds.skipped else 0


SectionFn = Callable[[Dataset, dict], "Section | None"]


def inputs_section(ds: Dataset, opts: dict) -> Section:
    return Section(
        "inputs", "Inputs",
        "One row per input file: the format detected from its content, the rows it gave, "
        "and its status (ok; partial: part skipped; empty: nothing recognised; "
        "unknown/failed: skipped; skipped: a file in a directory that no format recognises, "
        "noted once and not counted in the exit code).",
        {"sources": ds.sources, "runs": ds.runs},
    )


def throughput_section(ds: Dataset, opts: dict) -> Section | None:
    tp = ds["throughput"]
    if tp.empty:
        return None
    fraction = opts.get("warmup", thr.WARMUP_FRACTION)
    return Section(
        "throughput", "Throughput",
        "Per series (one kind of throughput line in one log): the value per instance after "
        f"warm-up (first {fraction:.0%} of each instance's steps dropped), and the job figure. "
        "Per-instance and per-device rates are summed; lines that already cover the whole job "
        "(scope global) are never summed again. 'mean' is the SambaNova convention.",
        {
            "summary": thr.throughput_summary(tp, fraction),
            "instances": thr.per_instance(tp, fraction),
        },
        figure_fn=partial(_throughput_figures, tp=tp, fraction=fraction),
    )


def _throughput_figures(section: Section, tp: pd.DataFrame, fraction: float,
                        ) -> dict[str, go.Figure]:
    from .figures import throughput_figures

    return throughput_figures(section.tables, tp, fraction)


def problems_section(ds: Dataset, opts: dict) -> Section | None:
    if ds.problems.empty:
        return None
    return Section(
        "problems", "Problems",
        "What was skipped (error) or looked suspicious (warning), with file and line.",
        {"problems": ds.problems},
    )


def _sections() -> list[SectionFn]:
    from .horovod_sections import horovod_section
    from .mpi_sections import communication_section, message_sizes_section
    from .tiles_sections import tiles_section

    return [inputs_section, throughput_section, communication_section, message_sizes_section,
            horovod_section, tiles_section, problems_section]


SECTIONS: list[SectionFn] = _sections()


def build(ds: Dataset, **opts: object) -> Report:
    """Run every section function on ``ds``; keep the sections that have data."""
    sections = [s for fn in SECTIONS if (s := fn(ds, opts)) is not None]
    return Report(ds, sections)
