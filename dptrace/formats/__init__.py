"""One package per input format: ``dptrace/formats/<name>/``, the package named as the format.

Each package's ``__init__`` holds the format's light spec (``SPEC``: name, tables, sniffing
rule, the engines it offers; it imports nothing heavy, no pandas), ``tables.py`` its tables'
schema (registered into :mod:`dptrace.schema`), and ``read.py`` the reader (``parse``, and
``parse_many`` for a format that reads many files at once), imported on first use by
:mod:`dptrace.registry`. A format with two routes names them like pandas engines:
``general.py`` (correct on anything, line or record by line) and ``fast.py`` (block or
columnar, declining to the general route where the layout does not fit), chosen with
``engine="auto"|"fast"|"general"``. Horovod timelines have one route (blocks, record by
record where a block does not decode) and no engine option.

A format's part of the report lives in its package too: ``sections.py`` (its section specs
and builders, found by :func:`dptrace.reports.registry.sections`; a format without one has
no section), ``terminal.py`` (their rich drawers) and ``figures.py`` (their plotly figures).
The spec, the tables and the parse routes never import these nor anything of
:mod:`dptrace.reports`: parsing does not pay for the report.

A package here whose name does not start with ``_`` is a format: :func:`names` finds it, so
a new format is one new package. Modules starting with ``_`` are shared by formats:
:mod:`._chrome` reads the Chrome trace-event container (Horovod timelines; PyTorch
profiler traces are the same container).

A format can also live outside dptrace, in a package of its own installed with an entry
point in the group :data:`ENTRY_POINT_GROUP` (``[project.entry-points."dptrace.formats"]``,
``mine = "my_dptrace_format"``: the name is the format's, the value its package). Its
package has the same parts as one here (``SPEC``; ``tables``, ``read``, and any of
``analyses``, ``findings``, ``facts``, ``compare``, ``sections``): :func:`names` lists it
after the built-in formats and :func:`module` says where it lives. An entry point that does
not load, or that names a built-in format, is left out and its error kept in
:data:`UNAVAILABLE`.

Every part a format may have is found the same way (:func:`import_parts`): for each format,
``<package>.<part>`` is imported if it exists; a part that fails to import costs only that
format's part, its error kept in :data:`UNAVAILABLE`.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

#: the entry-point group of formats shipped outside dptrace
ENTRY_POINT_GROUP = "dptrace.formats"
#: what could not be loaded, by entry point or module name: the error in one line
UNAVAILABLE: dict[str, str] = {}


def builtin() -> list[str]:
    """The format packages under this one, in name order."""
    return sorted(info.name for info in pkgutil.iter_modules(__path__)
                  if info.ispkg and not info.name.startswith("_"))


@lru_cache(maxsize=1)
def _plugins() -> dict[str, str]:
    """Formats from entry points: name -> package (module path), in name order."""
    from importlib.metadata import entry_points

    own = set(builtin())
    out: dict[str, str] = {}
    try:
        eps = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    except Exception as exc:   # a broken distribution's metadata: no plug-in, said once
        UNAVAILABLE[ENTRY_POINT_GROUP] = f"{type(exc).__name__}: {exc}"
        return out
    for ep in eps:
        where = f"{ENTRY_POINT_GROUP}:{ep.name}"
        if ep.name in own or ep.name in out or not ep.name.isidentifier():
            why = "names a built-in format" if ep.name in own else \
                "is given twice" if ep.name in out else "is not a valid format name"
            UNAVAILABLE[where] = f"the entry point {ep.name!r} = {ep.value!r} {why}"
            continue
        out[ep.name] = ep.value.partition(":")[0].strip()
    return out


def names() -> list[str]:
    """Every format: the built-in packages in name order, then the plug-ins' in name order."""
    return [*builtin(), *_plugins()]


def module(name: str) -> str:
    """The package of format ``name`` (``dptrace.formats.<name>`` for a built-in)."""
    plugin = _plugins().get(name)
    return plugin if plugin is not None else f"{__name__}.{name}"


def refresh() -> None:
    """Read the entry points again (a test that installs or fakes one)."""
    _plugins.cache_clear()
    for key in [k for k in UNAVAILABLE if k.startswith(ENTRY_POINT_GROUP)]:
        del UNAVAILABLE[key]


def import_parts(part: str) -> dict[str, object]:
    """Import ``<package>.<part>`` of every format that has one: format name -> module. A
    format without the part is left out; one whose part fails to import too, with its
    error in :data:`UNAVAILABLE` (so one broken format costs only its own part)."""
    out: dict[str, object] = {}
    for name in names():
        path = f"{module(name)}.{part}"
        try:
            out[name] = importlib.import_module(path)
        except Exception as exc:   # any import-time failure: a bug, a missing dependency
            if isinstance(exc, ModuleNotFoundError) and exc.name in (path, module(name)) \
                    and name in builtin():
                continue   # a built-in format without this part
            if isinstance(exc, ModuleNotFoundError) and exc.name == path:
                continue   # a plug-in without this part
            UNAVAILABLE[path] = f"{type(exc).__name__}: {exc}"
        else:
            UNAVAILABLE.pop(path, None)
    return out
