"""Code versions the fleet cache is keyed by: a format's parser version and the analysis
version, each the hash of the source files that make it.

The rule: a format's **parser version** is the sha256 of the source files its parse side
is made of: the format package's modules except its report and analysis side
(:data:`NOT_PARSE`), the core modules every load runs (:data:`CORE`), and every module of
dptrace (or of the format's own package, for a plug-in) that these import, found by
reading their ``import`` statements (:func:`closure`, transitively; imports inside
functions count). Editing one format's reader changes that format's version only, so a
survey reparses only the runs that hold that format; editing the loader changes all.

The **analysis version** is the same hash over what the findings and derived tables are
made of: :mod:`dptrace.findings`, :mod:`dptrace.analyses`, every format's ``analyses`` and
``findings`` modules, the fleet's own per-run summary (:mod:`dptrace.fleet.analyse`), and
everything they import. The report's faces are in neither.

Pure file reading: nothing here imports a reader.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from collections.abc import Iterable
from functools import cache, lru_cache
from pathlib import Path

#: the modules of a format package that are not its parse side: the report side
#: (sections, drawers, figures, compare measures) and the analysis side
NOT_PARSE = frozenset({"sections", "terminal", "figures", "compare", "analyses", "findings"})
#: the core modules every load runs, whatever the formats (detection, grouping into runs)
CORE = ("dptrace.loader", "dptrace.runs", "dptrace.jobs", "dptrace.registry",
        "dptrace.sources", "dptrace.schema", "dptrace.frames", "dptrace.dataset")
#: the roots of the analysis side besides every format's analyses and findings modules
ANALYSIS = ("dptrace.findings", "dptrace.analyses", "dptrace.fleet.analyse")


@cache
def _package_dir(top: str) -> Path | None:
    """The directory of the top-level package ``top`` (found once, without importing it)."""
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith("__init__.py"):
        return None
    return Path(spec.origin).parent


@cache
def _file_of(module: str) -> Path | None:
    """The source file of ``module`` (a package's ``__init__.py``), found on disk under its
    top-level package's directory; None when there is none."""
    top, _, rest = module.partition(".")
    root = _package_dir(top)
    if root is None:
        return None
    base = root.joinpath(*rest.split(".")) if rest else root
    candidates = (base / "__init__.py", base.with_suffix(".py")) if rest else (
        base / "__init__.py",)
    for path in candidates:
        if path.is_file():
            return path
    return None


#: import statements, found by pattern (no parse: hashing ~120 modules stays ~20 ms); an
#: import in a docstring counts too (it only adds a file to the hash)
_FROM = re.compile(rb"^([ \t]*)from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)",
                   re.M)
_IMPORT = re.compile(rb"^([ \t]*)import[ \t]+([\w., \t]+)", re.M)


@cache
def _imports(path: Path, module: str, top_only: bool = False) -> tuple[str, ...]:
    """The modules ``path`` (module ``module``) imports, absolute, as written (``from x
    import y`` gives both ``x`` and ``x.y``: y may be a module; ``@x``: the package or
    module names are taken from). ``top_only``: only the imports at module level (what
    importing it runs; a package's lazy names are not)."""
    text = _content(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for m in _IMPORT.finditer(text):
        if top_only and m.group(1):
            continue
        for part in m.group(2).decode("ascii", "replace").split(","):
            name = part.strip().split(" ")[0]
            if name:
                found.append(name)
    for m in _FROM.finditer(text):
        if top_only and m.group(1):
            continue
        where = m.group(2).decode("ascii", "replace")
        level = len(where) - len(where.lstrip("."))
        rest = where[level:]
        if level:
            parts = package.split(".")
            if level - 1 > len(parts):
                continue
            base = ".".join(parts[: len(parts) - (level - 1)])
            base = f"{base}.{rest}" if rest else base
        else:
            base = rest
        if not base:
            continue
        found.append("@" + base)
        names = m.group(3).decode("ascii", "replace").strip("() \t\r\n")
        for item in names.replace("\n", ",").split(","):
            name = item.strip().split(" ")[0]
            if name and name.isidentifier():
                found.append(f"{base}.{name}")
    return tuple(dict.fromkeys(found))


def closure(roots: Iterable[str], within: Iterable[str] = ("dptrace",)) -> dict[str, Path]:
    """Every module reachable from ``roots`` by import statements, limited to the top-level
    packages ``within``: module name -> source file (parent packages included)."""
    tops = tuple(within)
    seen: dict[str, Path] = {}
    todo = [(name, False) for name in roots]
    followed: set[str] = set()
    while todo:
        name, as_parent = todo.pop()
        if name.split(".")[0] not in tops or (name in seen and (as_parent or name in followed)):
            continue
        path = seen.get(name) or _file_of(name)
        if path is None:
            continue
        seen[name] = path
        parent = name.rpartition(".")[0]
        if parent:
            todo.append((parent, True))
        if not as_parent:
            followed.add(name)
        # a package imported only as the parent of a module runs its module-level imports
        for m in _imports(path, name, as_parent):
            # ``from package import name``: the package runs its module-level imports only
            todo.append((m[1:], _is_package(m[1:])) if m.startswith("@") else (m, False))
    return seen


@cache
def _is_package(module: str) -> bool:
    path = _file_of(module)
    return path is not None and path.name == "__init__.py"


@cache
def _content(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b"<unreadable>"


def digest(files: Iterable[Path], root: Path | None = None) -> str:
    """sha256 over the files' names (relative to ``root`` where under it) and contents."""
    h = hashlib.sha256()
    for path in sorted(set(files)):
        try:
            name = str(path.relative_to(root)) if root is not None else path.name
        except ValueError:
            name = path.name
        h.update(name.encode("utf-8", "surrogateescape") + b"\0")
        h.update(_content(path))
        h.update(b"\0")
    return h.hexdigest()


def _dptrace_root() -> Path:
    return Path(__file__).resolve().parent.parent


def _parse_roots(fmt: str) -> tuple[list[str], tuple[str, ...]]:
    """The parse-side modules of format ``fmt`` and the top-level packages to follow."""
    from .. import formats

    package = formats.module(fmt)
    init = _file_of(package)
    mods = [package]
    if init is not None and init.name == "__init__.py":
        for entry in sorted(os.listdir(init.parent)):
            stem, ext = os.path.splitext(entry)
            if ext == ".py" and stem != "__init__" and stem not in NOT_PARSE:
                mods.append(f"{package}.{stem}")
    return mods, tuple(dict.fromkeys(("dptrace", package.split(".")[0])))


@cache
def parser_version(fmt: str) -> str:
    """The parser version of format ``fmt`` (see the module's docstring): a hex sha256."""
    mods, within = _parse_roots(fmt)
    files = closure([*mods, *CORE], within)
    return digest(files.values(), _dptrace_root().parent)


@lru_cache(maxsize=1)
def core_version() -> str:
    """The version of the core alone: what a folder none of whose files any format read
    is keyed by (the detection rules live in the formats' packages, see parser_version)."""
    return digest(closure(CORE).values(), _dptrace_root().parent)


@lru_cache(maxsize=1)
def analysis_version() -> str:
    """The analysis version (see the module's docstring): a hex sha256."""
    from .. import formats

    roots = list(ANALYSIS)
    within = {"dptrace"}
    for name in formats.names():
        package = formats.module(name)
        within.add(package.split(".")[0])
        roots += [f"{package}.analyses", f"{package}.findings"]
    return digest(closure(roots, tuple(within)).values(), _dptrace_root().parent)


def parser_versions(names: Iterable[str]) -> dict[str, str]:
    """``{format: parser_version(format)}`` for the given formats (unknown ones: '')."""
    out = {}
    for name in sorted(set(names)):
        try:
            out[name] = parser_version(name)
        except (KeyError, ValueError, ImportError):
            out[name] = ""
    return out
