"""The ordinary findings of a watch are built again only when due (``Live.ordinary_due``):
the rule itself, and on real logs fed in pieces to a follower that what a snapshot shows in
between is the last build's (said by ``findings_elapsed_s``), that a new NCCL table makes a
build due at once (the socket fallback in the first snapshot that read its line), and that
the final snapshot's findings are those of ``dptrace.findings`` on the finished file."""

from __future__ import annotations

from pathlib import Path

import pytest

import dptrace
from dptrace.watch import snapshot as snap_mod
from dptrace.watch.follow import Follower
from dptrace.watch.snapshot import Live

ROOT = Path(__file__).parent
DRIFT = ROOT / "fixtures" / "trainlog" / "generated" / "drift" / "drift.log"
SOCKET_LOG = ROOT / "fixtures" / "nccl" / "tflogs_4rank_j8_rank.0_stderr.log"


def test_the_rule() -> None:
    live = Live()
    big = snap_mod.FINDINGS_ALWAYS_ROWS + 1_000
    others = {"(runs)": 1}
    assert live.ordinary_due(0.0, big, others, final=False)          # the first snapshot
    live.ordinary = (0.0, big, dict(others), [])
    assert not live.ordinary_due(10.0, big + 10, others, final=False)
    assert live.ordinary_due(10.0, big + 10, others, final=True)     # the final one
    grown = int(big * (1 + snap_mod.FINDINGS_GROWTH)) + 1
    assert live.ordinary_due(10.0, grown, others, final=False)       # rows grew 25%
    assert not live.ordinary_due(10.0, grown - 2_000, others, final=False)
    assert live.ordinary_due(snap_mod.FINDINGS_EVERY_S, big + 10, others, final=False)
    assert live.ordinary_due(10.0, big, {**others, "nccl_setup": 3}, final=False)
    assert live.ordinary_due(10.0, big, {"(runs)": 2}, final=False)  # a run's facts changed
    # a small log: every refresh
    live.ordinary = (0.0, 10, dict(others), [])
    assert live.ordinary_due(1.0, 20, others, final=False)


def _pieces(data: bytes, n: int) -> list[bytes]:
    step = max(1, len(data) // n)
    return [data[i:i + step] for i in range(0, len(data), step)]


def _kinds(rows: list[dict]) -> list[tuple[str, str]]:
    return sorted((r["kind"], r["message"]) for r in rows if not r["kind"].startswith("live_"))


@pytest.mark.skipif(not DRIFT.is_file(), reason="no drift log")
def test_between_builds_a_snapshot_shows_the_last_build_and_the_final_one_equals_the_report(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the schedule of a large log on a small one: no build for the rows alone
    monkeypatch.setattr(snap_mod, "FINDINGS_ALWAYS_ROWS", 0)
    monkeypatch.setattr(snap_mod, "FINDINGS_GROWTH", 1e9)
    monkeypatch.setattr(snap_mod, "FINDINGS_EVERY_S", 1e9)
    data = DRIFT.read_bytes()
    dst = tmp_path / DRIFT.name
    clock = [0.0]
    follower = Follower([str(dst)], clock=lambda: clock[0])
    live = Live(datasets=0)   # (each snapshot's whole Dataset: its rows are counted)
    snaps = []
    with open(dst, "ab") as out:
        for piece in _pieces(data, 6):
            out.write(piece)
            out.flush()
            clock[0] += 5.0
            follower.poll()
            snaps.append(live.snapshot(follower, 0.0, now=clock[0]))
    final = live.snapshot(follower, 0.0, final=True, now=clock[0] + 1)
    built = [s for s in snaps if s.findings_elapsed_s == s.elapsed_s]
    rows = [len(s.dataset["throughput"]) if "throughput" in s.dataset.tables else 0
            for s in snaps]
    assert rows[-1] > rows[1] > 0   # the training rows grew after the first snapshots
    # builds: the first snapshot, and one whenever the other tables or the runs changed;
    # never one per refresh while only the training rows grow
    assert len(built) < len(snaps)
    for s in snaps:
        assert s.findings_elapsed_s is not None and s.findings_elapsed_s <= s.elapsed_s
    assert final.findings_elapsed_s == final.elapsed_s
    report = dptrace.findings(str(dst))
    assert "throughput_drift" in set(report["kind"])
    assert _kinds(final.findings) == sorted(zip(report["kind"].astype(str),
                                                report["message"].astype(str), strict=True))


@pytest.mark.skipif(not SOCKET_LOG.is_file(), reason="no socket-fallback log")
def test_a_new_nccl_line_makes_the_findings_due_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snap_mod, "FINDINGS_ALWAYS_ROWS", 0)
    monkeypatch.setattr(snap_mod, "FINDINGS_GROWTH", 1e9)
    monkeypatch.setattr(snap_mod, "FINDINGS_EVERY_S", 1e9)
    data = SOCKET_LOG.read_bytes()
    line_end = data.index(b"\n", data.index(b"NET/Socket : Using")) + 1
    dst = tmp_path / SOCKET_LOG.name
    clock = [0.0]
    follower = Follower([str(dst)], clock=lambda: clock[0])
    live = Live()
    first_with_line = first_with_finding = None
    with open(dst, "ab") as out:
        for k, piece in enumerate(_pieces(data, 20)):
            out.write(piece)
            out.flush()
            clock[0] += 5.0
            follower.poll()
            snap = live.snapshot(follower, 0.0, now=clock[0])
            if first_with_line is None and snap.files[0]["read_bytes"] >= line_end:
                first_with_line = k
            if first_with_finding is None and any(
                    f["kind"] == "nccl_socket_fallback" for f in snap.findings):
                first_with_finding = k
    assert first_with_line is not None
    assert first_with_finding == first_with_line
