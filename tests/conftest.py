import os
import warnings
from pathlib import Path

import pytest
from xdist_group_guard import pytest_runtest_setup  # noqa: F401 (a hook: tests/xdist_group_guard.py)

FIXTURES = Path(__file__).parent / "fixtures"

#: tests marked ``slow`` here, by module (the file's stem) and, optionally, test function: they
#: cost minutes and check a class of thing the rest of the suite checks too, so CI runs them
#: once (on its main Python: ``.ci/run``), not on every Python (``-m "not slow"`` skips them).
#: A whole module is listed as ``(stem, None)``.
SLOW: dict[tuple[str, str | None], str] = {
    ("test_fuzz", "test_fuzz"): "seeded and coverage-guided fuzzing, minutes per format",
    ("test_corpus", "test_corpus_class"): "a load and a `dptrace report` per bad-input class",
    ("test_html_browser", None): "a real chromium per dashboard",
    ("test_notebook", None): "a Jupyter kernel running the example notebook",
    ("test_xdist_group_guard", None): "two pytest runs with two xdist workers each",
    # one report of every fixture at once; the HTML's other checks (hostile strings, the
    # notebook API, the CLI's --html) run everywhere
    ("test_html_report", "test_self_contained_offline_and_under_5_mb"): "every fixture's HTML",
    ("test_html_report", "test_every_section_with_caption_figures_and_tables"):
        "every fixture's HTML",
    # whether the real inputs exercise every rule: a property of the data, not of the Python
    ("test_findings", "test_real_data_has_every_kind"): "findings of every real folder",
    # whether docs/trainlog.md is current: a property of the repository, not of the Python
    ("test_job_figures", "test_the_docs_table_is_current"): "every real log, in a subprocess",
    ("test_fleet_html", None): "a survey of a fleet of real fixtures, read in a real chromium",
    # surveys of fleets copied from the real fixtures (each folder read and analysed); the
    # cache and engines' logic runs everywhere in test_fleet_engines' quick tests
    ("test_fleet_survey", None): "surveys of fleets of real fixtures, minutes",
    # the joint analysis of a task's folders against each folder's own (100 folders, 13 real
    # ones): a property of dptrace's code, ~1 CPU-minute; test_fleet_joint's cuts run everywhere
    ("test_fleet_joint_analysis", None): "joint and per-folder analyses of fleets, a minute",
    # replays against the wall clock (a rank that stops, a throughput that drops); the
    # incremental reading's equality with one read runs everywhere (test_watch_pieces/_replay)
    ("test_watch_live", None): "live replays that wait out real intervals",
}


def fuzz_replay() -> bool:
    """Whether test_fuzz only replays (DPTRACE_FUZZ_CASES=0 and DPTRACE_FUZZ_ATHERIS_RUNS=0:
    the committed corpus and the truncations, no new random or coverage-guided case): about
    40 s, and what the oldest Python must run (it found pandas 2's OverflowError there,
    37e4569), so then it is not slow and runs with the rest (``.ci/run``'s 3.10 leg)."""
    return all(os.environ.get(v) == "0" for v in ("DPTRACE_FUZZ_CASES",
                                                   "DPTRACE_FUZZ_ATHERIS_RUNS"))


def slow_reason(item: pytest.Item) -> str | None:
    """Why ``item`` is slow (SLOW), or None."""
    stem = item.path.stem
    name = getattr(item, "originalname", item.name)
    if (stem, name) == ("test_fuzz", "test_fuzz") and fuzz_replay():
        return None
    return SLOW.get((stem, name)) or SLOW.get((stem, None))


@pytest.hookimpl(tryfirst=True)   # before ``-m`` deselects by mark
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    stems = set()
    marked = set()
    for item in items:
        stems.add(item.path.stem)
        if slow_reason(item):
            item.add_marker(pytest.mark.slow)
            marked.add((item.path.stem, getattr(item, "originalname", item.name)))
    # a test renamed or removed leaves its SLOW entry marking nothing: say so (only where its
    # module was collected whole, i.e. no test was picked out by node id)
    if not any("::" in a for a in config.args):
        marked_modules = {stem for stem, _ in marked}
        for stem, name in SLOW:
            if (stem, name) == ("test_fuzz", "test_fuzz") and fuzz_replay():
                continue
            if stem in stems and ((stem, name) not in marked if name else stem not in marked_modules):
                warnings.warn(pytest.PytestWarning(
                    f"tests/conftest.py SLOW names {stem}::{name}, which is not collected: "
                    "update SLOW"), stacklevel=1)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
