"""A test marked ``xdist_group`` fails unless its group is really kept on one worker.

pytest-xdist's ``--dist loadgroup`` sends the tests of one group to one worker by adding
``@<group>`` to their node ids in the worker (``xdist/remote.py``). With pytest 9.2 and
pytest-xdist 3.8 that suffix is never added (pytest 9.2 builds ``nodeid`` from ``_id``, and
xdist still writes ``_nodeid``), so the groups were silently spread over the workers. The
suite no longer relies on groups (each format's fuzzing is one test); this plugin keeps a test
that comes to rely on one again from passing by luck: under xdist, a test with the mark fails
at setup unless its node id carries the suffix, i.e. unless the run uses ``--dist loadgroup``
with a pytest/xdist pair where grouping works (pytest 8.4 or 9.1 with xdist 3.8 do).
Outside xdist (one process) every group is trivially kept together.

Loaded by tests/conftest.py; tests/test_xdist_group_guard.py checks it on a real xdist run.
"""

from __future__ import annotations

import pytest

GROUP_MARK = "xdist_group"


def group_names(item: pytest.Item) -> list[str]:
    """The groups of ``item``'s ``xdist_group`` marks, as xdist names them."""
    names = set()
    for mark in item.iter_markers(GROUP_MARK):
        names.add(str(mark.args[0] if mark.args else mark.kwargs.get("name", "default")))
    return sorted(names)


def grouping_missing(item: pytest.Item) -> str | None:
    """Why ``item``'s group is not kept on one worker, or None when it is (or has no group)."""
    groups = group_names(item)
    if not groups or not hasattr(item.config, "workerinput"):
        return None
    suffix = "@" + "_".join(groups)
    if item.nodeid.endswith(suffix):
        return None
    return (f"{item.nodeid} is marked xdist_group({', '.join(groups)}) but its node id has no "
            f"{suffix!r}: the group is not kept on one worker. Run with --dist loadgroup, on a "
            "pytest/pytest-xdist pair where grouping works (not pytest 9.2 with xdist 3.8).")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    why = grouping_missing(item)
    if why:
        pytest.fail(why, pytrace=False)
