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

A report imports the report parts (``analyses``, ``findings``, ``sections``) only of the
formats whose tables its Dataset holds (:func:`reading`): a format's parts read the tables
its package names as :data:`REPORT_READS` (a tuple in its ``__init__``; without one, its
``SPEC.tables``), and a format with none of them in a Dataset has nothing to say of it
(every derived table of its is None, every section None, no rule fires). A part a format
needs for any Dataset (a rule over the other formats' findings) is named in its
:data:`REPORT_ALWAYS`. A look-up that names what no imported part declares imports every
format's part first (:mod:`dptrace.analyses`), so a wrong or missing declaration costs time,
never a result.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import lru_cache

#: the entry-point group of formats shipped outside dptrace
ENTRY_POINT_GROUP = "dptrace.formats"
#: what could not be loaded, by entry point or module name: the error in one line
UNAVAILABLE: dict[str, str] = {}
#: :func:`builtin`'s listing, by search path
_BUILTIN: dict[tuple[str, ...], list[str]] = {}
#: the optional name in a format package's ``__init__``: the Dataset tables its report
#: parts read (default: its ``SPEC.tables``)
REPORT_READS = "REPORT_READS"
#: the optional name in a format package's ``__init__``: its parts a report imports
#: whatever the Dataset holds (``("findings",)``: a rule over every format's findings)
REPORT_ALWAYS = "REPORT_ALWAYS"
#: what each format's parts read and which parts it always needs (:func:`_reads`)
_READS: dict[tuple[str, int], tuple[frozenset[str] | None, frozenset[str]]] = {}
#: :func:`reading`'s answers, by tables and part
_READING: dict[tuple[frozenset[str], str | None, tuple[str, ...]], list[str]] = {}
#: the format of each module asked about (:func:`owner`)
_OWNERS: dict[str, str | None] = {}


def builtin() -> list[str]:
    """The format packages under this one, in name order (listed once per search path:
    :func:`refresh` lists them again)."""
    where = tuple(__path__)
    found = _BUILTIN.get(where)
    if found is None:
        found = _BUILTIN[where] = sorted(_packages(where))
    return list(found)


def _packages(where: tuple[str, ...]) -> set[str]:
    """The packages (a directory with an ``__init__``) directly under the directories
    ``where`` whose names do not start with ``_``: what ``pkgutil.iter_modules`` lists as
    packages, without the ``inspect`` module it imports (~15 ms of ``dptrace --help``); a
    path entry that is not a directory (a zip) is asked through pkgutil."""
    import os
    from importlib.machinery import all_suffixes

    inits = {"__init__" + suffix for suffix in all_suffixes()}
    out: set[str] = set()
    for path in where:
        try:
            names = os.listdir(path)
        except OSError:
            out.update(info.name for info in pkgutil.iter_modules([path])
                       if info.ispkg and not info.name.startswith("_"))
            continue
        for name in names:
            if "." in name or name.startswith("_"):
                continue
            try:
                inner = os.listdir(os.path.join(path, name))
            except OSError:   # a file, or unreadable: not a package
                continue
            if not inits.isdisjoint(inner):
                out.add(name)
    return out


@lru_cache(maxsize=1)
def _plugins() -> dict[str, str]:
    """Formats from entry points: name -> package (module path), in name order."""
    own = set(builtin())
    out: dict[str, str] = {}
    try:
        eps = _entry_points()
        if eps is None:
            from importlib.metadata import entry_points

            eps = [(ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP)]
        eps = sorted(eps, key=lambda ep: ep[0])
    except Exception as exc:   # a broken distribution's metadata: no plug-in, said once
        UNAVAILABLE[ENTRY_POINT_GROUP] = f"{type(exc).__name__}: {exc}"
        return out
    for name, value in eps:
        where = f"{ENTRY_POINT_GROUP}:{name}"
        if name in own or name in out or not name.isidentifier():
            why = "names a built-in format" if name in own else \
                "is given twice" if name in out else "is not a valid format name"
            UNAVAILABLE[where] = f"the entry point {name!r} = {value!r} {why}"
            continue
        out[name] = value.partition(":")[0].strip()
    return out


def _entry_points() -> list[tuple[str, str]] | None:
    """(name, value) of each entry point of :data:`ENTRY_POINT_GROUP`, as
    ``importlib.metadata.entry_points(group=...)`` finds them, read from the
    ``*.dist-info``/``*.egg-info`` directories of ``sys.path`` directly: importing
    importlib.metadata (and the email package it loads) costs a small report ~15-25 ms.

    The same rules: the path's directories in order, in each its metadata directories in
    listing order, the first distribution of each normalised name only, its
    ``entry_points.txt`` read as importlib.metadata reads it (stripped lines, ``#``
    comments, ``[group]`` headers, ``name = value``). None where the path holds what this
    does not cover (a zip or egg on it, a finder with distributions of its own, a name
    given twice in one directory): then importlib.metadata itself is asked."""
    import os
    import re
    import sys
    from importlib.machinery import PathFinder

    if any(f is not PathFinder and hasattr(f, "find_distributions") for f in sys.meta_path):
        return None
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    for entry in sys.path:
        if not isinstance(entry, str):
            return None
        root = entry or "."
        if os.path.basename(root).lower().endswith(".egg"):
            return None
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):   # a zip file on the path
                return None
            continue
        here: set[str] = set()
        for child in children:
            low = child.lower()
            if not low.endswith((".dist-info", ".egg-info")):
                continue
            name = re.sub(r"[-_.]+", "-", low.rpartition(".")[0].partition("-")[0])
            name = name.replace("-", "_")
            if name in here:
                return None
            here.add(name)
            if name in seen:
                continue
            seen.add(name)
            try:
                with open(os.path.join(root, child, "entry_points.txt"),
                          encoding="utf-8") as fh:
                    text = fh.read()
            except OSError:   # (an egg-info file, a distribution without entry points)
                continue
            out.extend(_group_pairs(text, ENTRY_POINT_GROUP))
    return out


def _group_pairs(text: str, group: str) -> list[tuple[str, str]]:
    """The ``name = value`` lines of section ``[group]`` of an entry_points.txt."""
    section = None
    out = []
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line.strip("[]")
        elif section == group:
            name, value = line.split("=", 1)   # (none: ValueError, as importlib's)
            out.append((name.strip(), value.strip()))
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
    _BUILTIN.clear()
    _READS.clear()
    _READING.clear()
    _OWNERS.clear()
    for key in [k for k in UNAVAILABLE if k.startswith(ENTRY_POINT_GROUP)]:
        del UNAVAILABLE[key]


def _reads(name: str) -> tuple[frozenset[str] | None, frozenset[str]]:
    """The tables format ``name``'s report parts read (None: any, when its package does not
    import: its parts are then tried, and their error kept, as for every Dataset) and the
    parts it needs for every Dataset."""
    try:
        package = importlib.import_module(module(name))
    except Exception:   # (import_parts keeps the error of the part it then tries)
        return (None, frozenset())
    got = _READS.get((name, id(package)))
    if got is None:
        tables = getattr(package, REPORT_READS, None)
        if tables is None:
            tables = getattr(getattr(package, "SPEC", None), "tables", None)
        got = (None if tables is None else frozenset(tables),
               frozenset(getattr(package, REPORT_ALWAYS, ())))
        _READS[(name, id(package))] = got
    return got


def reading(tables: Iterable[str] | None, part: str | None = None) -> list[str]:
    """The formats whose report parts read any of ``tables`` (None: every format), in
    :func:`names` order; with ``part``, also those that need that part for any Dataset
    (:data:`REPORT_ALWAYS`)."""
    if tables is None:
        return names()
    known = tuple(names())
    key = (frozenset(tables), part, known)
    out = _READING.get(key)
    if out is None:
        out = []
        for name in known:
            reads, always = _reads(name)
            if reads is None or not key[0].isdisjoint(reads) or (
                    part is not None and part in always):
                out.append(name)
        _READING[key] = out
    return list(out)


def owner(module_name: str) -> str | None:
    """The format whose package holds module ``module_name`` (None: no format's, e.g. a
    rule or section registered by a notebook or by dptrace's own sections)."""
    if module_name not in _OWNERS:
        found = None
        for name in names():
            package = module(name)
            if module_name == package or module_name.startswith(package + "."):
                found = name
                break
        _OWNERS[module_name] = found
    return _OWNERS[module_name]


def import_parts(part: str, tables: Iterable[str] | None = None) -> dict[str, object]:
    """Import ``<package>.<part>`` of every format that has one: format name -> module. A
    format without the part is left out; one whose part fails to import too, with its
    error in :data:`UNAVAILABLE` (so one broken format costs only its own part).
    ``tables``: only the formats that read any of them (:func:`reading`)."""
    out: dict[str, object] = {}
    for name in reading(tables, part):
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
