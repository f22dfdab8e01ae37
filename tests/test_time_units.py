"""The data model's time units (docs/data-model.md, "Units"): every time column of the schema
is in seconds (``_s``: a total over many events, a setting) or microseconds (``_us``: one
event's duration, a timestamp), its name ends with its unit, and no column is in ms; and
the conversion of a printed millisecond value is exact to the printed decimal."""

from __future__ import annotations

from decimal import Decimal

import pytest

from dptrace import schema
from dptrace.formats._units import MS_TO_S, MS_TO_US, US_TO_MS, scaled

TIME_UNITS = {"s", "us"}


def _columns() -> list[tuple[str, schema.Column]]:
    return [(t.name, c) for t in schema.tables().values() for c in t.columns]


def test_no_millisecond_column_and_every_time_column_named_by_its_unit():
    cols = _columns()
    assert cols
    assert [(t, c.name) for t, c in cols if c.name.endswith("_ms") or c.unit == "ms"] == []
    for t, c in cols:
        if c.unit in TIME_UNITS:
            assert c.name.endswith(f"_{c.unit}"), (t, c.name, c.unit)
        if c.name.endswith(("_s", "_us")) and not c.name.endswith("_per_s"):
            assert c.unit in TIME_UNITS, (t, c.name, c.unit)


def test_converted_columns_name_the_inputs_own_field():
    """A user finds the column from the field the input prints."""
    docs = {(t, c.name): c.doc for t, c in _columns()}
    assert "Mean (ms) x 1000" in docs[("mpi_callsites", "call_mean_us")]
    assert "'Total Latency(ms)' / 1000" in docs[("ds_comms", "total_latency_s")]
    assert "'Avg Latency(ms)' x 1000" in docs[("ds_comms", "avg_latency_us")]
    assert "'Timeout(ms)' / 1000" in docs[("nccl_events", "timeout_s")]
    assert "'time_ms' x 1000" in docs[("mllog", "time_us")]


@pytest.mark.parametrize("text", ["0.0138", "13.94", "1527.17", "0.07", "1e-05", "8317.12",
                                  "1621399928015", "1621399928015.123", "0.1", "999.999"])
def test_scaling_is_the_printed_decimal_times_the_factor(text):
    v = float(text)
    assert scaled(v, MS_TO_US) == float(Decimal(text) * 1000)
    assert scaled(v, MS_TO_S) == float(Decimal(text) / 1000)
    # and back: the value the input printed
    assert scaled(scaled(v, MS_TO_US), US_TO_MS) == v


def test_scaling_passes_what_is_not_a_finite_number():
    assert scaled(None, MS_TO_US) is None
    assert scaled(float("inf"), MS_TO_US) == float("inf")
    nan = scaled(float("nan"), MS_TO_US)
    assert nan != nan
    assert scaled(1e307, MS_TO_US) == float("inf")      # the reader names it
    assert scaled(600000, MS_TO_S) == 600.0 and scaled(True, MS_TO_S) is True
