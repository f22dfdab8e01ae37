"""The package's import graph: every module imports on its own (no circle anywhere), and the
report model and its JSON face load no drawing library.

A module that imports fine after others but fails on its own is an import circle waiting
for the user who imports it first (``import dptrace.reports.tiles_sections`` used to fail
with "partially initialised module"). The first test imports each module of ``dptrace``
first, in a fresh process: one interpreter preloads the third-party libraries (pandas,
rich, plotly: they cannot take part in a circle of ours) and then forks one child per
module, in which nothing of ``dptrace`` is loaded yet. That keeps ~70 imports near 10 s on
two cores; without ``os.fork`` each module gets its own interpreter.
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import dptrace

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "data"

#: third-party modules the parent loads before it forks (each child would load them anyway)
PRELOAD = ("numpy", "pandas", "pyarrow", "rich.console", "rich.table", "plotly.graph_objects",
           "plotly.subplots")

_FORK_EACH = textwrap.dedent("""
    import importlib, json, os, sys, traceback
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    assert not any(m == "dptrace" or m.startswith("dptrace.") for m in sys.modules)
    failed = {}
    for name in NAMES:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                importlib.import_module(name)
                code, text = 0, b""
            except BaseException:
                code, text = 1, traceback.format_exc().encode()
            os.write(write, text[-4000:])
            os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as fh:
            text = fh.read().decode(errors="replace")
        _, status = os.waitpid(pid, 0)
        if status != 0:
            failed[name] = text or f"exit status {status}"
    print(json.dumps(failed))
""")


def modules() -> list[str]:
    """Every module of the dptrace package, subpackages included, found on disk (no import:
    ``pkgutil.walk_packages`` would import each package to look inside it)."""
    found = []

    def walk(path: str, prefix: str) -> None:
        for info in pkgutil.iter_modules([path], prefix):
            found.append(info.name)
            if info.ispkg:
                walk(os.path.join(path, info.name.rsplit(".", 1)[-1]), info.name + ".")

    found.append("dptrace")
    walk(dptrace.__path__[0], "dptrace.")
    return sorted(found)


def _run(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def test_the_walk_sees_every_layer():
    names = modules()
    for expected in ("dptrace.cli", "dptrace.reports.model", "dptrace.reports.registry",
                     "dptrace.reports.fmt", "dptrace.reports.sections.inputs",
                     "dptrace.reports.terminal.inputs", "dptrace.formats.sntilestat.sections",
                     "dptrace.formats.sntilestat.terminal", "dptrace.formats.sntilestat.figures",
                     "dptrace.formats.sntilestat.compute"):
        assert expected in names
    assert len(names) > 40


def test_every_module_imports_on_its_own():
    names = modules()
    if hasattr(os, "fork"):
        code = f"PRELOAD = {PRELOAD!r}\nNAMES = {names!r}\n" + _FORK_EACH
        proc = _run(code, timeout=300)
        assert proc.returncode == 0, proc.stderr[-4000:]
        failed = json.loads(proc.stdout.strip().splitlines()[-1])
    else:  # pragma: no cover - one interpreter per module
        failed = {}
        for name in names:
            proc = _run(f"import {name}")
            if proc.returncode:
                failed[name] = proc.stderr[-2000:]
    assert not failed, "modules that fail to import on their own:\n" + "\n".join(
        f"--- {name}\n{text}" for name, text in failed.items())


def _loaded_after(steps: str) -> dict[str, list[str]]:
    """Run ``steps`` in a fresh interpreter; which of rich and plotly were loaded after each
    step (``mark('name')`` records one)."""
    code = textwrap.dedent("""
        import json, sys
        seen = {}
        def mark(step):
            seen[step] = sorted({m.split(".")[0] for m in sys.modules
                                 if m.split(".")[0] in ("rich", "plotly")})
    """) + textwrap.dedent(steps) + "\nprint(json.dumps(seen))\n"
    proc = _run(code)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_building_a_report_and_its_json_load_neither_rich_nor_plotly():
    seen = _loaded_after(f"""
        import dptrace
        ds = dptrace.load({str(EXAMPLES)!r})
        mark("load")
        report = dptrace.report(ds)
        assert [s.name for s in report.sections][:3] == ["findings", "inputs", "throughput"]
        assert report.tables and isinstance(report, dptrace.Report)
        mark("build")
        from dptrace.reports import registry
        for spec in registry.sections():   # every section module, not only those with data
            spec.build(ds, {{}})
        mark("every builder")
        text = report.to_json()
        assert '"sections"' in text
        mark("to_json")
        report.to_html()
        mark("to_html")
    """)
    assert seen["load"] == seen["build"] == seen["every builder"] == seen["to_json"] == []
    assert seen["to_html"] == ["plotly"]   # the HTML face draws figures, and never with rich


def test_compare_and_scaling_and_their_json_load_neither_rich_nor_plotly():
    seen = _loaded_after(f"""
        import dptrace
        ds = dptrace.load({str(EXAMPLES)!r})
        mark("load")
        one = ds.run(ds.run_ids[0])
        dptrace.compare(one, one, labels=("a", "b")).to_json()
        dptrace.scaling({{"1": one, "2": one}}).to_json()
        mark("views")
    """)
    assert seen["load"] == seen["views"] == []


def test_the_report_model_imports_no_face():
    seen = _loaded_after("""
        import dptrace.reports.model, dptrace.reports.registry, dptrace.reports.fmt
        import dptrace.reports.json_report
        mark("model")
        from dptrace.reports import registry
        registry.sections()
        mark("sections")
    """)
    assert seen == {"model": [], "sections": []}
