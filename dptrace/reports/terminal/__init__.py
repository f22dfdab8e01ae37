"""Terminal face of the report, drawn with rich.

Each section is drawn by the drawer its spec names (:class:`~dptrace.reports.registry.
SectionSpec` ``terminal``): a format's section by its package's ``terminal.py``
(``dptrace/formats/<format>/terminal.py``), the format-independent ones by a module of this
package per subject; a section without one gets
:func:`~dptrace.reports.terminal.generic.draw_generic`. The shared pieces stay here and in
:mod:`dptrace.reports`: :mod:`.generic`, :mod:`dptrace.reports.fit` (fitting tables to the
width), :mod:`dptrace.reports.fmt` and :mod:`dptrace.reports.safe_text`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from rich.console import Console

from ..model import Report, Section
from ..registry import resolve, section_spec
from ..safe_text import visible, visible_frame
from .generic import draw_generic


def render(report: Report, console: Console, *, show_all: bool = False) -> None:
    """Print every section of ``report`` to ``console``.

    ``show_all``: every throughput series, setup bars (downloads, loading) included; by
    default the most important training and eval series
    (:data:`~dptrace.formats.trainlog.terminal.MAX_SERIES`), and one line that says what
    else there is.
    """
    opts: dict[str, Any] = {"show_all": show_all}
    for section in map(_safe, report.sections):
        spec = section_spec(section.name)
        drawer = resolve(spec.terminal) if spec and spec.terminal else draw_generic
        console.print(drawer(section, opts))


def _safe(section: Section) -> Section:
    """``section`` with every string from an input made visible (:func:`safe_text.visible`):
    no escape sequence from a file name, host, routine or tensor name reaches the terminal,
    and no bidi override or zero-width character makes a name display as another."""
    return dataclasses.replace(
        section, title=visible(section.title), caption=visible(section.caption),
        tables={k: visible_frame(df) for k, df in section.tables.items()})
