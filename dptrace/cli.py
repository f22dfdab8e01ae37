"""Command line: ``dptrace report|compare|scaling|export|survey|cache|watch|schema|formats``.
It only wires arguments to the library (``survey`` and ``cache``: :mod:`dptrace.fleet.command`;
``watch``: :mod:`dptrace.watch.command`; each of those modules adds its own subcommands and
runs them).

Exit codes (also in ``dptrace --help`` and the README):
  0  every input was parsed (files inside a directory that no format recognises are
     skipped with a note and do not count)
  1  partial: the report was written, but an input or part of one was skipped
  2  usage error (bad option, unknown --format)
  3  failure: no input gave any data
  4  --fail-on: the report was written and has a finding of that severity or worse
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import DptraceError
from .exitcodes import EXIT_FAILURE, EXIT_FINDINGS, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE

if TYPE_CHECKING:  # the heavy modules (pandas, rich) load only for a command that needs them
    from rich.console import Console

    from .dataset import Dataset
    from .reports.model import Report

#: modules that add subcommands of their own: ``add_parser(sub)`` and ``run(args) -> int``
#: (light at import: no pandas, no rich, so that ``--help`` stays fast)
FEATURE_COMMANDS = {"dptrace.fleet.command": ("survey", "cache"),
                    "dptrace.watch.command": ("watch",)}

#: inputs larger than this (in total) get a progress bar
PROGRESS_BYTES = 64 << 20

_EPILOG = """exit codes:
  0  every input was parsed (unrecognised files inside a directory are noted, not counted)
  1  partial: report written, but an input or part of one was skipped (see Problems)
  2  usage error (bad option, unknown --format, an output that cannot be written)
  3  failure: no input gave any data
  4  with --fail-on LEVEL: a finding of LEVEL or worse (the report was written)
"""


#: the commands this module runs itself
OWN_COMMANDS = ("report", "compare", "scaling", "export", "schema", "formats")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser. ``command``: the word the command line starts with; when
    it is one of :data:`OWN_COMMANDS`, the feature modules' commands are added by name only
    (their modules and options are not loaded: ~8 ms; the usage line that names every
    command is the same)."""
    p = argparse.ArgumentParser(
        prog="dptrace", description="Why does my data-parallel training job run slow?",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"dptrace {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("report", help="parse inputs and print a report",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("paths", nargs="+", metavar="[LABEL=]PATH",
                   help="files, globs or directories (.gz/.bz2/.xz ok); a directory is one "
                   "run, LABEL=PATH names the run of PATH's inputs (see README: Runs)")
    r.add_argument("--format", default="auto", help="force a format (see `dptrace formats`)")
    r.add_argument("--json", metavar="FILE", help="also write the report as JSON ('-': stdout, "
                   "replacing the terminal report)")
    r.add_argument("--html", metavar="FILE", help="also write the self-contained HTML dashboard")
    r.add_argument("--warmup", type=_fraction, default=0.1, metavar="FRACTION",
                   help="share of each instance's steps dropped as warm-up, in [0, 1) "
                   "(default 0.1)")
    r.add_argument("--threshold", action="append", default=[], metavar="KIND=VALUE",
                   help="override a finding's threshold, in the unit of its threshold column "
                   "(repeatable), e.g. throughput_straggler=10 (%% below the median); the "
                   "kinds that take one: README, Findings")
    r.add_argument("--fail-on", choices=("warning", "critical"), metavar="LEVEL",
                   help="exit 4 when a finding of LEVEL (warning or critical) or worse is "
                   "found, after writing the report: for CI pipelines of training jobs")
    r.add_argument("--all", action="store_true", dest="show_all",
                   help="show every throughput series in the terminal, setup bars included "
                   "(default: the most important ones)")
    r.add_argument("--width", type=int, help="terminal width (default: detected)")
    _limit_options(r)
    r.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    _runs_parsers(sub)
    _export_parser(sub)
    for module, names in FEATURE_COMMANDS.items():
        if command in OWN_COMMANDS:
            for name in names:
                sub.add_parser(name)
        else:
            _feature(module).add_parser(sub)
    sub.add_parser("schema", help="print every table's columns, dtypes, units and meaning")
    sub.add_parser("formats", help="list the input formats dptrace reads")
    return p


_RUN_HELP = ("a run: [LABEL=]PATH[,PATH...] (files, globs, directories; every path of the "
             "argument is one run; LABEL names it, default the first path's name)")


def _runs_parsers(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser("compare", help="two runs side by side: what changed, and where",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("base", metavar="BASE", help=_RUN_HELP + "; the run compared against")
    c.add_argument("candidate", metavar="CANDIDATE", help="the run after the change, as BASE")
    s = sub.add_parser("scaling", help="runs at several sizes: speedup, efficiency, and what "
                       "grows with the number of workers",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("runs", nargs="+", metavar="RUN", help=_RUN_HELP + "; a LABEL that is a "
                   "number (8=path) states the workers where the data does not")
    s.add_argument("--by", choices=("ranks", "nodes", "instances"), default="ranks",
                   help="count workers as ranks (the world size; default), nodes or "
                   "throughput instances")
    s.add_argument("--strong", action="store_true",
                   help="strong scaling: the global batch is fixed (same formula on the "
                   "global figure; the default is weak scaling)")
    for p in (c, s):
        p.add_argument("--format", default="auto", help="force a format (see `dptrace formats`)")
        p.add_argument("--json", metavar="FILE", help="also write the report as JSON ('-': "
                       "stdout, replacing the terminal report)")
        p.add_argument("--html", metavar="FILE",
                       help="also write the self-contained HTML dashboard")
        p.add_argument("--warmup", type=_fraction, default=0.1, metavar="FRACTION",
                       help="share of each instance's steps dropped as warm-up (default 0.1)")
        p.add_argument("--threshold", action="append", default=[], metavar="KIND=VALUE",
                       help="override a finding's threshold (repeatable), e.g. "
                       "throughput_change=10 or scaling_efficiency=70")
        p.add_argument("--fail-on", choices=("warning", "critical"), metavar="LEVEL",
                       help="exit 4 when a finding of LEVEL or worse is found")
        p.add_argument("--width", type=int, help="terminal width (default: detected)")
        _limit_options(p)
        p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")


def run_arguments(items: Sequence[str]) -> list[object]:
    """The paths of ``[LABEL=]PATH[,PATH...]`` run arguments, each run labelled (its LABEL,
    else its first path's name; repeated names get '#2', '#3', ...), so that all the paths
    of one argument make one run."""
    from . import runs

    out: list[object] = []
    taken: set[str] = set()
    for item in items:
        label, paths = None, item
        first = runs.command_line([item])[0]
        if first.label is not None:
            label, paths = first.label, first.path
        parts = [paths] if os.path.lexists(paths) else [p for p in paths.split(",") if p]
        if not parts:
            raise DptraceError(f"run {item!r}: no path")
        name = label or os.path.basename(os.path.normpath(parts[0])) or parts[0]
        unique, k = name, 1
        while unique in taken:
            k += 1
            unique = f"{name}#{k}"
        taken.add(unique)
        out.extend(runs.Argument(p, unique) for p in parts)
    return out


def _export_parser(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser("export", help="parse inputs and write every table to a directory",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    e.add_argument("paths", nargs="+", help="files, globs or directories (.gz/.bz2/.xz ok)")
    e.add_argument("--to", required=True, metavar="DIR", help="directory for <table>.<format>")
    e.add_argument("--format", default="csv", choices=("csv", "parquet", "json"),
                   help="file format (default csv; parquet needs 'dptrace[parquet]')")
    e.add_argument("--input-format", default="auto", metavar="NAME",
                   help="force the input format (see `dptrace formats`)")
    e.add_argument("--raw", action="store_true",
                   help="CSV: write text cells as read (by default a cell that a spreadsheet "
                   "would run as a formula, starting with = + - @, gets a leading ')")
    _limit_options(e)
    e.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")


def _limit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-decompressed", type=_size, metavar="SIZE",
                   help="most bytes to decompress from one .gz/.bz2/.xz input, e.g. 32G "
                   "(0: no limit; default: $DPTRACE_MAX_DECOMPRESSED, else half the "
                   "available memory, at most 16 GiB); the rest of a larger input is not "
                   "read, and a problem says where it was cut")


def _size(text: str) -> int:
    """argparse type of --max-decompressed: bytes from 16G, 512M, 1000000 (0: no limit)."""
    from .sources import parse_size

    try:
        value = parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return 0 if value >= (1 << 62) else value


def _fraction(text: str) -> float:
    """argparse type of --warmup: a number in [0, 1)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(
            f"{text} is outside [0, 1): it is the share of each instance's steps dropped "
            "as warm-up (0.1 drops the first 10%)")
    return value


def _feature(module: str) -> Any:
    import importlib

    return importlib.import_module(module)


def _feature_of(command: str) -> Any | None:
    """The feature module whose subcommand ``command`` is, or None."""
    for module, commands in FEATURE_COMMANDS.items():
        if command in commands:
            return _feature(module)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(words[0] if words else None).parse_args(argv)
    feature = _feature_of(args.command)
    if feature is not None:
        return int(feature.run(args))
    if args.command in ("schema", "formats"):   # plain text: no rich, no pandas
        try:
            return _schema() if args.command == "schema" else _formats()
        except BrokenPipeError:
            return _stdout_closed(EXIT_OK)
    _import_uncollected(args.command, frozen=argv is None)
    return _command(args)


def _import_uncollected(command: str, *, frozen: bool) -> None:
    """Import what ``command`` needs (pandas, pyarrow, rich's console, the loader, the
    report's model and terminal face) with the cyclic garbage collector paused, then, in a
    process of its own (``frozen``: ``dptrace`` on the command line, not ``main(argv)``
    called by a program), move every object made so far out of the collector's sight
    (:func:`gc.freeze`): modules, classes and functions live as long as the process, and
    walking them again and again cost a small report ~50 ms of its ~0.6 s (about 170
    collections). Cycles made afterwards are collected as usual."""
    from . import collector_paused

    with collector_paused(freeze=frozen):
        try:
            from rich.console import Console  # noqa: F401

            from . import api  # noqa: F401
            if command != "export":
                from .reports import model, terminal  # noqa: F401
        except Exception:   # (a broken install: the command's own import says so, as before)
            pass


def _command(args: argparse.Namespace) -> int:
    """``report``, ``compare``, ``scaling`` or ``export``: rich consoles, errors as one line."""
    from rich.console import Console
    from rich.markup import escape

    from .reports.safe_text import visible

    class _Console(Console):
        def on_broken_pipe(self) -> None:   # rich would exit(1): let main pick the code
            self.quiet = True
            raise BrokenPipeError(32, "stdout closed")

    console = _Console(width=getattr(args, "width", None), highlight=False)
    err = Console(stderr=True, highlight=False)
    try:
        if args.command == "export":
            return _export(args, err)
        if args.command in ("compare", "scaling"):
            return _runs_report(args, console, err)
        return _report(args, console, err)
    except BrokenPipeError:   # stdout closed early (`| head`): stop quietly
        return _stdout_closed(getattr(args, "_code", EXIT_OK))
    except DptraceError as exc:
        if args.debug if hasattr(args, "debug") else False:
            raise
        err.print(f"[red]dptrace:[/red] {escape(visible(str(exc)))}", soft_wrap=True)
        return EXIT_USAGE
    except Exception as exc:  # last resort: one clear line, traceback with --debug
        if getattr(args, "debug", False):
            raise
        err.print(f"[red]dptrace: internal error:[/red] {type(exc).__name__}: "
                  f"{escape(visible(str(exc)))} (rerun with --debug for the traceback)")
        return EXIT_FAILURE


def _check_output_file(option: str, target: str) -> None:
    """A usage error, before any input is read, when ``target`` cannot be written: its
    directory is missing or it names a directory."""
    parent = os.path.dirname(os.path.abspath(target))
    if os.path.isdir(target):
        raise DptraceError(f"{option} {target}: is a directory; name a file")
    if not os.path.isdir(parent):
        raise DptraceError(f"{option} {target}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise DptraceError(f"{option} {target}: directory {parent} is not writable")


def _stdout_closed(code: int) -> int:
    """The reader of stdout went away (``dptrace report ... | head -1``): point stdout at
    /dev/null so that Python's exit-time flush does not fail again, and keep the exit code
    the data deserves (every file asked for was already written)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (tests): nothing to flush
        pass
    return code


def _report(args: argparse.Namespace, console: Console, err: Console) -> int:
    from .reports import model

    thresholds = _checked(args)
    ds = _load_with_progress(args.paths, args.format, err, args.max_decompressed)
    report = model.build(ds, warmup=args.warmup, thresholds=thresholds)
    return _write(args, report, model.exit_code(ds), console)


def _runs_report(args: argparse.Namespace, console: Console, err: Console) -> int:
    """``dptrace compare`` and ``dptrace scaling``: every run loaded into one Dataset (one
    labelled run per argument), then the view's report."""
    from .reports import model

    thresholds = _checked(args)
    items = [args.base, args.candidate] if args.command == "compare" else args.runs
    arguments = run_arguments(items)
    ds = _load_with_progress(arguments, args.format, err, args.max_decompressed)
    labels = list(dict.fromkeys(a.label for a in arguments))  # type: ignore[attr-defined]
    if args.command == "compare":
        ids = ds.run_ids
        base, cand = (labels[0], labels[1]) if set(labels[:2]) <= set(ids) else (None, None)
        if base is None:
            lost = [a for a in labels[:2] if a not in ids]
            why = ("; " + "; ".join(_why_lost(a, arguments, ds) for a in lost)) if lost else ""
            raise DptraceError(
                f"a comparison needs one run per argument; the inputs make {len(ids)} run(s)"
                + (f": {', '.join(ids)}" if ids else "") + why
                + ("" if lost else " (a file that holds several runs: split it, or compare "
                   "its runs with dptrace.compare in a notebook)"))
        report = model.build(ds, "compare", warmup=args.warmup, thresholds=thresholds,
                             base=base, candidate=cand)
    else:
        report = model.build(ds, "scaling", warmup=args.warmup, thresholds=thresholds,
                             by=args.by, strong=args.strong, expected=labels)
    return _write(args, report, model.exit_code(ds), console)


def _why_lost(label: str, arguments: Sequence[object], ds: Any) -> str:
    """Why the run ``label`` of a comparison has no data: its paths do not exist, its files
    are another run's (a file is read once, for the first run that names it), or nothing in
    them was read."""
    from .sources import expand

    paths = [str(getattr(a, "path", "")) for a in arguments if getattr(a, "label", None) == label]
    missing = [p for p in paths if not os.path.lexists(p)]
    if missing and len(missing) == len(paths):
        return f"{label}: no such file or directory: {', '.join(missing)}"
    found, _ = expand(paths)
    run_of = {os.path.abspath(str(s)): str(r) for s, r in
              zip(ds.sources["source"], ds.sources["run"], strict=True)}
    others = sorted({run_of[k] for src in found
                     if (k := os.path.abspath(src.path)) in run_of and run_of[k] != label})
    if found and others:
        return (f"{label}: its files are the files of run {', '.join(others)} (a file is read "
                "once, for the first run that names it)")
    return f"{label} gave no data (see Problems)"


def _checked(args: argparse.Namespace) -> dict[str, float]:
    """Usage errors before any input is read (an unknown --format, an output file that cannot
    be written, a bad --threshold); the threshold overrides."""
    from . import registry
    from .findings.thresholds import parse_overrides

    registry.get(args.format) if args.format != "auto" else None
    for option, target in (("--html", args.html), ("--json", args.json)):
        if target and target != "-":
            _check_output_file(option, target)
    try:
        return parse_overrides(args.threshold)
    except ValueError as exc:
        raise DptraceError(str(exc)) from None


def _write(args: argparse.Namespace, report: Report, data_code: int, console: Console) -> int:
    """Write the report's faces (HTML and JSON files first, then the terminal or JSON on
    stdout); the exit code (``--fail-on`` applied)."""
    code = args._code = _fail_on(data_code, report, args.fail_on)
    # files first: a closed stdout (`| head`) must not cost the dashboard or the JSON file
    if args.html:
        report.to_html(args.html)
    text = _json_text(report, code) if args.json else ""
    if args.json and args.json != "-":
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    if args.json == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    else:
        from .reports import terminal

        terminal.render(report, console, show_all=getattr(args, "show_all", False))
        console.file.flush()
    return code


def _json_text(report: Report, code: int) -> str:
    """The JSON report (its module imported only when asked for)."""
    from .reports import json_report

    return json_report.dumps(report, code)


def _fail_on(code: int, report: object, level: str | None) -> int:
    """``code``, or :data:`EXIT_FINDINGS` when ``--fail-on LEVEL`` and the report has a
    finding of LEVEL or worse (never over a usage error or a failure)."""
    if level is None or code not in (EXIT_OK, EXIT_PARTIAL):
        return code
    from .schema import SEVERITIES

    found = report.tables.get("findings.findings")  # type: ignore[attr-defined]
    if found is None or found.empty:
        return code
    worst = SEVERITIES[: SEVERITIES.index(level) + 1]
    return EXIT_FINDINGS if found["severity"].astype(str).isin(worst).any() else code


def _export(args: argparse.Namespace, err: Console) -> int:
    from . import registry
    from .reports import export
    from .reports.model import exit_code

    export.check_format(args.format)
    export.check_directory(args.to)
    registry.get(args.input_format) if args.input_format != "auto" else None
    ds = _load_with_progress(args.paths, args.input_format, err, args.max_decompressed)
    written = export.export(ds, args.to, args.format, raw=args.raw)
    err.print(f"dptrace: wrote {len(written)} tables to {args.to}", markup=False)
    return exit_code(ds)


def _load_with_progress(paths: Sequence[object], fmt: str, err: Console,
                        max_decompressed: int | None = None) -> Dataset:
    """``api.load`` with a progress bar on stderr (a terminal only, inputs over
    PROGRESS_BYTES). The bar counts bytes, so it moves within one large file too: readers
    of large inputs report how far they are (:mod:`dptrace.progress`). The inputs are
    expanded once, for both the bar and the load."""
    from . import api, runs
    from .sources import resolve_max_decompressed

    given = [p if isinstance(p, runs.Argument) else runs.command_line([str(p)])[0]
             for p in paths]
    sources, found, arguments, origins = api.expand_arguments(
        given, max_decompressed=resolve_max_decompressed(max_decompressed))
    sizes = {src.name: _size_or_zero(src) for src in sources}
    total = sum(sizes.values())
    if total < PROGRESS_BYTES or not err.is_terminal:
        return api.load_sources(sources, found, fmt, arguments=arguments, origins=origins)
    # the bar's modules only when a bar is drawn (rich.progress, live, spinner: ~30 ms)
    from rich.progress import (
        BarColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    from . import progress as byte_progress

    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
               TextColumn("{task.fields[files]}"), TimeElapsedColumn())
    with Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task("parsing", total=total, files="")
        state = {"base": 0, "size": 0}

        def step(src: object, i: int, n: int) -> None:
            name = str(getattr(src, "name", ""))
            state["base"] += state["size"]
            state["size"] = sizes.get(name, 0)
            bar.update(task, completed=state["base"], files=f"file {i + 1}/{n}",
                       description=f"parsing {_tail(name)}")

        def within(done: int, whole: int) -> None:
            share = min(1.0, done / whole) if whole > 0 else 0.0
            bar.update(task, completed=state["base"] + int(state["size"] * share))

        with byte_progress.watching(within):
            return api.load_sources(sources, found, fmt, progress=step, arguments=arguments,
                                    origins=origins)


def _size_or_zero(src: object) -> int:
    if getattr(src, "unreadable", None) is not None:   # a FIFO, a broken link: never opened
        return 0
    try:
        return int(src.size())  # type: ignore[attr-defined]
    except OSError:   # gone, a dangling link, unreadable: the loader reports it
        return 0


def _tail(name: str, width: int = 40) -> str:
    """The end of a long path (the file name matters most)."""
    return name if len(name) <= width else "…" + name[-(width - 1):]


def _schema() -> int:
    """The schema as Markdown, written as is: a pipe or a file gets the same valid Markdown
    as a terminal (no wrapping at any width)."""
    from . import schema

    sys.stdout.write(schema.markdown().rstrip("\n") + "\n")
    return EXIT_OK


def _formats() -> int:
    """Each format's name, tables and description, as plain text wrapped to the terminal
    (80 columns in a pipe): the command imports no reader, no pandas and no rich."""
    import shutil
    import textwrap

    from . import registry

    width = max(40, shutil.get_terminal_size().columns if sys.stdout.isatty() else 80)
    out = []
    for p in registry.parsers().values():
        out.append(textwrap.fill(f"{p.name}  tables: {', '.join(p.tables)}", width,
                                 subsequent_indent="    ", break_on_hyphens=False))
        out.append(textwrap.fill(p.description, width, initial_indent="    ",
                                 subsequent_indent="    ", break_on_hyphens=False))
    sys.stdout.write("\n".join(out) + "\n")
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
