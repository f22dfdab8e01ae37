"""Every string from an input or an argument goes through the same made-safe step, as a
value or as a column name (issue 30): run labels with terminal escapes or a bidi override
become the column headers of the scaling and compare pivots ('MPI time per rank (s) by
routine, per run'), in the terminal and in the HTML."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from dptrace.cli import main

WEAK = Path(__file__).parent / "fixtures" / "scaling" / "weak"
#: an OSC title change, a red background, a right-to-left override
BAD = ["\x1b]0;pwned\x07", "\x1b[41m", "\u202e"]


@pytest.mark.parametrize("bad", BAD)
@pytest.mark.parametrize("view", ["scaling", "compare"])
@pytest.mark.parametrize("engine", ["json", "orjson"])
def test_labels_with_control_characters_never_reach_the_faces_raw(tmp_path, capsys,
                                                                   monkeypatch, bad, view,
                                                                   engine):
    """Under plotly's both JSON engines: the standard library's escapes non-ASCII text,
    orjson writes it raw, so only dptrace's own sanitising keeps a bidi override out."""
    if engine == "orjson":
        pytest.importorskip("orjson")
    import plotly.io as pio

    monkeypatch.setattr(pio.json.config, "default_engine", engine)
    html = tmp_path / "out.html"
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    args = [view, f"1{bad}=" + str(WEAK / "n1"), f"2{bad}x=" + str(WEAK / "n2"),
            "--width", "160", "--html", str(html)]
    assert main(args) in (0, 1, 4)
    text = out.getvalue() + capsys.readouterr().out
    page = html.read_text(encoding="utf-8")
    if view == "scaling":                  # the pivot whose headers are run labels
        assert "by routine" in text
    assert "<th" in page and "1" in page
    for raw in ("\x1b", "\x07", "\u202e"):
        assert raw not in text, (view, repr(bad))
        assert raw not in page, (view, repr(bad))
