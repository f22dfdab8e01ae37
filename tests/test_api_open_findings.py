"""The public names ``dptrace.findings`` (a plain function, issue 31 §4) and ``dptrace.open``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pandas as pd

import dptrace
from dptrace import api

THETA = Path(__file__).parent / "fixtures" / "mpitrace" / "alcfws_theta_knl32"


def test_findings_is_a_plain_function_even_after_its_package_is_imported():
    import dptrace.findings.rules as rules  # the package is imported ...
    from dptrace.findings import thresholds
    from dptrace.reports import model  # noqa: F401  (which imports the findings package)

    assert inspect.isfunction(dptrace.findings)       # ... and the name stays the function
    assert dptrace.findings is api.findings
    assert list(inspect.signature(dptrace.findings).parameters) == ["ds", "warmup",
                                                                     "thresholds"]
    assert "findings" in (dptrace.findings.__doc__ or "")
    assert callable(rules.run_rules) and thresholds.overridable()
    assert dptrace.open is api.open and "open" in dptrace.__all__ and "open" in dir(dptrace)


def test_findings_of_paths_and_of_a_saved_dataset(tmp_path):
    ds = dptrace.load(THETA)
    want = dptrace.findings(ds)
    assert len(want) == 3
    pd.testing.assert_frame_equal(dptrace.findings(THETA), want)
    pd.testing.assert_frame_equal(dptrace.findings(str(THETA)), want)
    saved = ds.save(tmp_path / "saved")
    pd.testing.assert_frame_equal(dptrace.findings(saved), want)
    pd.testing.assert_frame_equal(dptrace.findings(dptrace.open(saved)), want)
