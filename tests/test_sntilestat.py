"""sntilestat: real doc listings, a `watch` capture, bad rows; numbers checked by hand."""

import json
import re
from pathlib import Path

import pandas as pd
import pytest

import dptrace
from dptrace.cli import main
from dptrace.formats.sntilestat import compute as tl

FIX = Path(__file__).parent / "fixtures" / "sntilestat"


def load(name: str) -> dptrace.Dataset:
    return dptrace.load(FIX / name)


def test_sn30_multinode_64_busy_tiles_16_instances():
    ds = load("ug_sn30_multinode_from_docs.md")
    t = ds["tiles"]
    assert len(t) == 64 and t["pid"].notna().all()
    assert (t["snapshot"] == 0).all()
    inst = tl.instances(t).set_index("pid")
    assert len(inst) == 16 and set(inst["tiles"]) == {4}
    # PID 2750338 owns /XRDU_0/RDU_1/TILE_0..3: %exec 89.9, 89.9, 89.8, 89.9 (doc lines 162-165)
    assert inst.loc[2750338, "exec_mean_pct"] == pytest.approx(89.875)
    assert inst.loc[2750338, "exec_min_pct"] == 89.8
    assert inst.loc[2750338, "rdu_list"] == "0/1"
    assert inst["lowest"].sum() == 1 and inst.loc[2750338, "lowest"]
    # PID 2750333, TILE_0..3 of 0/0: pload 0.3, 0.3, 0.3, 0.3 -> 0.3; aload 0.1 0.1 0.3 0.3 -> 0.2
    assert inst.loc[2750333, "pload_mean_pct"] == pytest.approx(0.3)
    assert inst.loc[2750333, "aload_mean_pct"] == pytest.approx(0.2)
    assert t["command"].iloc[0] == "/opt/sambaflow/apps/nlp/transformers_on_rdu/venv/b"


def test_same_doc_also_gives_the_throughput_lines():
    ds = load("ug_sn30_multinode_from_docs.md")
    assert ds.sources["format"].item() == "sntilestat+trainlog"
    tp = ds["throughput"]
    samba = tp[tp["pattern"] == "sambaflow"]
    assert len(samba) == 8 and samba["value"].sum() == pytest.approx(5278.341076, rel=1e-9)


def test_sn10_collapsed_whitespace_wrapped_command():
    ds = load("aitbdocs_sambanova_Miscellaneous_from_docs.md")
    t = ds["tiles"]
    first = t[t["snapshot"] == 0]
    busy = first[first["pid"].notna()]
    assert len(busy) == 4 and set(busy["pid"]) == {49880}
    # lines 84-95: the command wraps onto two continuation lines
    assert busy["command"].iloc[0] == ("python res_ffn_mnist.py run "
                                       "--pef=pef/res_ffn_mnist/res_ffn_mnist.pef --num-epochs 100")
    # %exec 7.0, 6.9, 4.7, 6.3 -> 6.225; %pload 10.4 11.3 11.4 11.7 -> 11.2
    assert busy["exec_pct"].mean() == pytest.approx(6.225)
    assert busy["pload_pct"].mean() == pytest.approx(11.2)
    assert (first.loc[first["pid"].isna(), "idle_pct"] == 100.0).all()
    assert "collapsed" in ds.sources["variant"].item()


def test_headerless_excerpt_with_ellipsis():
    ds = load("ug_sn30_single_from_docs.md")
    t = ds["tiles"]
    assert len(t) == 6 and t["pid"].notna().sum() == 4
    assert t["exec_pct"].head(4).tolist() == [96.9] * 4
    probs = ds.problems
    assert probs["line"].tolist() == [344] and "elides" in probs["message"].item()


def test_all_idle_listing():
    ds = load("ug_sn30_miscellaneous_idle_from_docs.md")
    t = ds["tiles"]
    assert t["pid"].isna().all() and (t["idle_pct"] == 100.0).all()
    assert tl.instances(t).empty
    assert tl.idle_tiles(t)["always_idle"].sum() == len(t)


def test_watch_capture_snapshots_times_and_series():
    ds = load("watch_sntilestat_sn30.typescript")
    t = ds["tiles"]
    assert len(t) == 3 * 64
    assert t["time"].drop_duplicates().tolist() == [
        pd.Timestamp("2023-04-17 10:20:01"), pd.Timestamp("2023-04-17 10:20:03"),
        pd.Timestamp("2023-04-17 10:20:05")]
    assert set(t["host"]) == {"sn30-r1-h1"}
    series = tl.exec_series(t).set_index(["snapshot", "pid"])["exec_mean_pct"]
    # 8 tiles of 2750338 at 91.6 + 0.1*(t%3): (91.6*8 + 0.1*(0+1+2+0+1+2+0+1)) / 8 = 91.6875
    assert series[(0, 2750338)] == pytest.approx(91.6875)
    assert series[(1, 2750338)] == pytest.approx(61.6875)  # slowed by 30 in snapshot 1
    assert (2, 2750347) not in series.index  # RDU 3/1 idle in snapshot 2
    idle = tl.idle_tiles(t)
    assert len(idle) == 8 and not idle["always_idle"].any()


def test_bad_rows_reported_with_lines(tmp_path):
    text = (
        "TILE                 %idle %exec %pload %aload %chkpt %quiesce    PID     USER COMMAND\n"
        "/XRDU_0/RDU_0/TILE_0   8.0  91.6    0.3    0.1    0.0      0.0 2750333  vsastry /opt/x\n"
        "/XRDU_0/RDU_0/TILE_1   8.0  91.6    0.3\n"
        "/XRDU_0/RDU_0/TILE_2   8.0  9x.6    0.3    0.1    0.0      0.0 2750333  vsastry /opt/x\n"
        "/XRDU_0/RDU_0/TILE_3 100.0   0.0    0.0    0.0    0.0      0.0\n")
    p = tmp_path / "tiles.txt"
    p.write_text(text)
    ds = dptrace.load(p)
    assert ds["tiles"]["tile"].tolist() == [0, 3]
    errs = ds.problems[ds.problems["severity"] == "error"]
    assert errs["line"].tolist() == [3, 4]
    assert "3 of 6 percentage columns" in errs["message"].iloc[0]
    assert "'9x.6' is not a number" in errs["message"].iloc[1]
    assert ds.sources["status"].item() == "partial"


def test_unknown_extra_column(tmp_path):
    text = ("TILE                 %idle %exec %pload %aload %chkpt %quiesce %hbm    PID     USER COMMAND\n"
            "/XRDU_0/RDU_0/TILE_0   8.0  91.6    0.3    0.1    0.0      0.0  12.5 2750333  vsastry /opt/x\n")
    p = tmp_path / "tiles.txt"
    p.write_text(text)
    ds = dptrace.load(p)
    row = ds["tiles"].iloc[0]
    assert row["pid"] == 2750333 and row["command"] == "/opt/x" and row["quiesce_pct"] == 0.0
    assert "%hbm" in ds.problems["message"].item()


def test_report_section(capsys):
    code = main(["report", str(FIX / "ug_sn30_multinode_from_docs.md"), "--width", "130"])
    out = capsys.readouterr().out
    assert code == 0
    assert "SambaNova tiles" in out and "89.9 #3" in out
    assert "lowest %exec: PID 2750338 at 89.9%" in out


def test_instance_numbers_are_per_source_when_sources_share_pids(capsys):
    # the watch capture reuses the multinode listing's PIDs, in another order
    code = main(["report", str(FIX / "ug_sn30_multinode_from_docs.md"),
                 str(FIX / "watch_sntilestat_sn30.typescript"), "--width", "130"])
    out = capsys.readouterr().out
    assert code == 0
    # the tiles panel of each source starts with "<source>: N snapshot(s)"
    multinode, watch = re.split(r"watch_sntilestat_sn30\.typescript: \d+ snapshot", out)
    # multinode: PID 2750338 owns RDU 0/1 tiles 0-3, instance #3 in its grid and its table
    assert "89.9 #3" in multinode
    assert re.search(r"#3\s+2750338\s", multinode)
    # watch capture: the same PID owns all of RDU 0/1 and is instance #2 there
    assert re.search(r"#2\s+2750338\s", watch)
    assert "81.6 #2" in watch


def test_fast_paths_agree_with_the_line_loop(monkeypatch):
    from pandas.testing import assert_frame_equal

    from dptrace.formats.sntilestat import read as sntilestat

    path = FIX / "watch_sntilestat_sn30.typescript"
    fast = dptrace.load(path)["tiles"]
    monkeypatch.setattr(sntilestat, "_quick", lambda buf, lines, name, problems: None)
    aligned = dptrace.load(path)["tiles"]
    monkeypatch.setattr(sntilestat._fixed, "read", lambda buf, header, lines: None)
    regex = dptrace.load(path)["tiles"]
    monkeypatch.setattr(sntilestat.general, "file_rows", lambda buf, lines, headers: None)
    loop = dptrace.load(path)["tiles"]
    assert_frame_equal(fast, aligned)
    for other in (regex, loop):   # every route numbers the rows' lines alike
        assert_frame_equal(fast.astype({"user": str, "command": str}),
                           other.astype({"user": str, "command": str}))
    assert loop["lineno"].iloc[0] == 5


def test_lineno_is_the_rows_line_in_the_file(monkeypatch):
    from dptrace.formats.sntilestat import read as sntilestat

    # a watch capture: line 72 is the first row of the second screen, after watch's escapes
    path = FIX / "watch_sntilestat_sn30.typescript"
    lines = path.read_bytes().split(b"\n")
    assert lines[71].startswith(b"/XRDU_0/RDU_0/TILE_0   8.0  91.6    0.3    0.1    0.0"
                                b"      0.0 2750333  vsastry ")
    quick = dptrace.load(path)["tiles"]
    second = quick[quick["snapshot"] == 1].iloc[0]
    assert (second["xrdu"], second["rdu"], second["tile"], second["lineno"]) == (0, 0, 0, 72)
    # a PDF copy with wrapped commands (the line loop): a row's first line
    doc = FIX / "aitbdocs_sambanova_Miscellaneous_from_docs.md"
    text = doc.read_text().split("\n")
    assert text[86] == "/XRDU_0/RDU_0/TILE_1 80.5 6.9 11.3 1.3 0.0 0.0 49880 arnoldw python"
    t = dptrace.load(doc)["tiles"]
    row = t[(t["snapshot"] == 0) & (t["tile"] == 1) & (t["rdu"] == 0)].iloc[0]
    assert (row["exec_pct"], row["pid"], row["lineno"]) == (6.9, 49880, 87)
    # every row of every fixture, on every route, names the line that holds it
    for name in ("ug_sn30_multinode_from_docs.md", "ug_sn30_single_from_docs.md",
                 "ug_sn30_miscellaneous_idle_from_docs.md", path.name, doc.name):
        raw = (FIX / name).read_bytes().split(b"\n")
        for route in ("quick", "regex"):
            if route == "regex":
                monkeypatch.setattr(sntilestat, "_quick", lambda buf, lines, name, problems: None)
                monkeypatch.setattr(sntilestat._fixed, "read", lambda buf, header, lines: None)
            tiles = dptrace.load(FIX / name)["tiles"]
            assert tiles["lineno"].notna().all(), (name, route)
            for r in tiles.itertuples():
                assert b"/XRDU_%d/RDU_%d/TILE_%d " % (r.xrdu, r.rdu, r.tile) in raw[r.lineno - 1]
        monkeypatch.undo()


def test_json_report_of_a_watch_capture(tmp_path):
    out = tmp_path / "r.json"
    code = main(["report", str(FIX / "watch_sntilestat_sn30.typescript"), "--json", str(out)])
    assert code == 0
    tables = json.loads(out.read_text())["sections"]["tiles"]["tables"]
    series = [r for r in tables["exec_series"] if r["pid"] == 2750338]
    # snapshot times from the `watch` headers, as ISO 8601 text
    assert [r["time"] for r in series] == [
        "2023-04-17T10:20:01", "2023-04-17T10:20:03", "2023-04-17T10:20:05"]
    assert series[1]["exec_mean_pct"] == pytest.approx(61.6875)
    inst = {r["pid"]: r for r in tables["instances"]}
    assert inst[2750338]["lowest"] is True and inst[2750338]["tiles"] == 8


def test_narrow_terminal_keeps_pids_whole(capsys):
    # 110 columns used to cut the PIDs to '27503…'; the command gives way instead
    code = main(["report", str(FIX / "ug_sn30_multinode_from_docs.md"), "--width", "90"])
    out = capsys.readouterr().out
    assert code == 0
    pids = set(dptrace.load(FIX / "ug_sn30_multinode_from_docs.md")["tiles"]["pid"])
    assert len(pids) == 16
    rows = [line for line in out.splitlines() if re.match(r"\s*#\d+\s+\d{7}\s", line)]
    assert {int(line.split()[1]) for line in rows} == pids
    assert all("vsastry" in line and "%" in line for line in rows)
