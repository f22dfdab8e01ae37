"""The section registry: every report section is declared once, by the module that builds it.

A :class:`SectionSpec` names a section, places it in the report (``order``), and points at
its three parts:

- ``build``: a pure function ``(Dataset, options) -> Section | None`` that makes the
  section's tables from analysis results (None when the Dataset has nothing for it). It
  imports analysis and the report model only: no rich, no plotly, so building a report and
  writing its JSON never load a drawing library.
- ``figures``: the plotly figure function, ``(tables, **section.figure_args) -> {name:
  go.Figure}``, called once, when the HTML face or a notebook first reads
  ``section.figures``.
- ``terminal``: the rich drawer, ``(section, options) -> renderable``.

``figures`` and ``terminal`` are lazy references, ``"package.module:function"`` strings (or
any callable that imports what it needs when called): the registry imports them only when a
face asks (:func:`resolve`).

Section modules call :func:`register_section` at import. :func:`sections` imports them all
(once) before it answers (:func:`discover`):

- the format-independent sections (inputs, findings, problems): every module of
  :mod:`dptrace.reports.sections`;
- each format's sections: ``dptrace.formats.<format>.sections`` for every format package
  (:func:`dptrace.formats.names`) that has one, beside its drawers (``terminal.py``) and
  figure functions (``figures.py``). A format without a ``sections`` module has no section.

So a new format brings its sections in its own package, and no shared list changes. A
format whose ``sections`` module fails to import (a bug, a missing dependency, a name
another module took) costs only its own sections: it is skipped, the rest of the report is
built, and the error is kept in :data:`UNAVAILABLE` (nothing is printed). Code outside
the package (a plugin, a notebook) may register more sections the same way.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import formats

if TYPE_CHECKING:
    from ..dataset import Dataset
    from .model import Section

#: a lazy reference to a function: "package.module:function", or the function itself
Ref = str | Callable[..., Any]
#: a section's builder: the Dataset and the report options in, the section or None out
BuildFn = Callable[["Dataset", Mapping[str, Any]], "Section | None"]
#: header facts a section adds to the HTML dashboard: label -> plain text
FactsFn = Callable[["Section"], Mapping[str, str]]


@dataclass(frozen=True)
class SectionSpec:
    """One report section, declared once."""

    #: the section's key in ``Report.section``, the JSON and the HTML anchors
    name: str
    #: its heading in every face
    title: str
    #: its place in the report (lower first); ties are broken by name
    order: int
    #: ``(Dataset, options) -> Section | None``: tables only, no rich, no plotly
    build: BuildFn
    #: the figure function, ``(tables, **figure_args) -> dict[str, go.Figure]`` (lazy)
    figures: Ref | None = None
    #: the rich drawer, ``(section, options) -> RenderableType`` (lazy); none: the generic
    #: table drawer of :mod:`dptrace.reports.terminal`
    terminal: Ref | None = None
    #: facts for the HTML header (label -> plain text; the faces escape it). Sections that
    #: give the same label are joined with '; ' in report order.
    facts: FactsFn | None = None
    #: the reports the section belongs to (:data:`VIEWS`): ``report`` (``dptrace report``),
    #: ``compare`` (``dptrace compare``: two runs side by side), ``scaling`` (``dptrace
    #: scaling``: runs at several sizes)
    views: tuple[str, ...] = ("report",)


#: the kinds of report: one Dataset's report, two runs compared, runs at several scales
VIEWS = ("report", "compare", "scaling")
_SPECS: dict[str, SectionSpec] = {}
#: True: every section module imported (the report's own and every format's); a set: the
#: report's own and those of the formats of these tables (:func:`discover`); False: none
_DISCOVERED: bool | frozenset[str] = False
#: the package whose every module is imported to find the format-independent sections
SECTIONS_PACKAGE = "dptrace.reports.sections"
#: the module of a format package that declares its sections, if it has any
FORMAT_SECTIONS = "sections"
#: modules of :data:`SECTIONS_PACKAGE` that serve other views only, imported when a view they
#: serve is asked for (the compare and scaling sections import the comparison's analysis
#: and rules, which an ordinary report never needs)
VIEW_MODULES = {"runs": ("compare", "scaling")}
#: section modules of formats that failed to import, skipped by :func:`discover`: module
#: name -> the error, in one line (``"dptrace.formats.x.sections": "ImportError: ..."``)
UNAVAILABLE: dict[str, str] = {}


def register_section(spec: SectionSpec) -> SectionSpec:
    """Add ``spec`` to the report; returns it (so a module can keep it as ``SPEC``).

    Registering a name again from the module that first did it (a reloaded module) replaces
    the spec; from another module it is an error: two sections would share a key."""
    unknown = set(spec.views) - set(VIEWS)
    if unknown or not spec.views:
        raise ValueError(f"section {spec.name!r}: views {spec.views!r} are not among {VIEWS}")
    old = _SPECS.get(spec.name)
    if old is not None and _module(old) != _module(spec):
        raise ValueError(f"section {spec.name!r} is already registered by {_module(old)}")
    _SPECS[spec.name] = spec
    return spec


def _module(spec: SectionSpec) -> str:
    return getattr(spec.build, "__module__", "") or ""


def discover(tables: Iterable[str] | None = None) -> None:
    """Import every section module (once): each registers its sections.

    First every module of :data:`SECTIONS_PACKAGE` (an error there is raised: the report's
    own sections are broken), then ``dptrace.formats.<format>.sections`` of each format
    that has one (an error there skips that format's sections and is kept in
    :data:`UNAVAILABLE`). ``tables``: only the formats that read any of them
    (:func:`dptrace.formats.reading`)."""
    global _DISCOVERED
    if _DISCOVERED is True:
        return
    done = _DISCOVERED or frozenset()
    if _DISCOVERED is False:
        # first: a section module that asks for sections() does not recurse
        _DISCOVERED = done
        try:
            package = importlib.import_module(SECTIONS_PACKAGE)
            for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
                if not info.name.startswith("_") and info.name not in VIEW_MODULES:
                    importlib.import_module(f"{SECTIONS_PACKAGE}.{info.name}")
        except BaseException:
            _DISCOVERED = False
            raise
    if tables is None:
        _DISCOVERED = True
        todo = formats.names()
    else:
        new = frozenset(tables) - done
        if not new:
            return
        _DISCOVERED = done | new
        todo = formats.reading(new, FORMAT_SECTIONS)
    for name in todo:
        _import_format_sections(f"{formats.module(name)}.{FORMAT_SECTIONS}")


def _discover_views(view: str | None) -> None:
    """Import the modules of :data:`VIEW_MODULES` that serve ``view`` (None: all)."""
    for module, views in VIEW_MODULES.items():
        if view is None or view in views:
            importlib.import_module(f"{SECTIONS_PACKAGE}.{module}")


def _import_format_sections(module: str) -> None:
    """Import one format's sections module; a format without one has no section, and one
    that fails to import is skipped, its error kept in :data:`UNAVAILABLE`."""
    try:
        importlib.import_module(module)
    except Exception as exc:  # any import-time failure: a bug, a name taken, a broken extension
        if isinstance(exc, ModuleNotFoundError) and exc.name == module:
            return   # no sections module: a format without a section
        UNAVAILABLE[module] = f"{type(exc).__name__}: {exc}"
        for name in [n for n, spec in _SPECS.items() if _module(spec) == module]:
            del _SPECS[name]   # what it registered before it failed goes with it
    else:
        UNAVAILABLE.pop(module, None)


def sections(view: str | None = "report", tables: Iterable[str] | None = None,
             ) -> list[SectionSpec]:
    """The registered sections of ``view`` (default: the ordinary report; None: every
    view's), in report order. ``tables``: only those that can have data for a Dataset
    holding these tables: the sections of the formats that read any of them
    (:func:`dptrace.formats.reading`; a format's sections read its tables, and are None
    without them) and those no format declares (the inputs, the findings)."""
    discover(tables)
    _discover_views(view)
    found = (s for s in _SPECS.values() if view is None or view in s.views)
    if tables is not None:
        reading = set(formats.reading(tables))
        found = (s for s in found if (fmt := formats.owner(_module(s))) is None
                 or fmt in reading)
    return sorted(found, key=lambda s: (s.order, s.name))


def section_spec(name: str) -> SectionSpec | None:
    """The spec registered under ``name``; None for a section nobody registered. A
    report's sections are registered when it is built: every section module is imported
    only for a name not registered yet (a report's terminal face need not import every
    format's sections)."""
    if name not in _SPECS:
        discover()
    if name not in _SPECS:
        _discover_views(None)
    return _SPECS.get(name)


def resolve(ref: Ref) -> Callable[..., Any]:
    """The function a lazy reference names, imported now."""
    if callable(ref):
        return ref
    module, sep, attr = ref.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"a section reference is 'package.module:function', not {ref!r}")
    fn = getattr(importlib.import_module(module), attr)
    if not callable(fn):
        raise TypeError(f"{ref} is not callable")
    return fn
