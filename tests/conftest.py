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
    ("test_corpus", "test_corpus_class"): "one `dptrace report` subprocess per bad-input class",
    ("test_html_browser", None): "a real chromium per dashboard",
    ("test_notebook", None): "a Jupyter kernel running the example notebook",
    ("test_xdist_group_guard", None): "two pytest runs with two xdist workers each",
}


def slow_reason(item: pytest.Item) -> str | None:
    """Why ``item`` is slow (SLOW), or None."""
    stem = item.path.stem
    name = getattr(item, "originalname", item.name)
    return SLOW.get((stem, name)) or SLOW.get((stem, None))


@pytest.hookimpl(tryfirst=True)   # before ``-m`` deselects by mark
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if slow_reason(item):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
