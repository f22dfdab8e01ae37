"""Issue 30, 'silent loss in DeepSpeed comms summaries': a bad size cell (inf/nan/-5.0 KB)
costs its row only, with an error naming the line (it dropped that row and every row after
it, unsaid, exit 0); an op line torn by another writer is named and the rows under the next
good op line are read; a caller with a space and an op name DeepSpeed does not print
(``broad-cast``) read as given (they dropped every row).

Real inputs: the DeepSpeed docs page (tests/fixtures/dscomms) and the Polaris training log's
summary (../shared/realdata/trainlog, 9 rows: broadcast x8, log_summary_barrier x1)."""

from __future__ import annotations

from pathlib import Path

import pytest

import dptrace

HERE = Path(__file__).parent
DOCS = (HERE / "fixtures" / "dscomms" / "deepspeed_comms_logging_tutorial_from_docs.md")
POLARIS = HERE.parent.parent / "shared" / "realdata" / "trainlog" / \
    "mlprof_deepspeed_comms_logger_polaris.log"
needs_real = pytest.mark.skipif(not POLARIS.is_file(), reason="shared/realdata is not beside "
                                "the clone")


def _summary() -> bytes:
    """The Polaris log's comms summary: header, broadcast, 8 rows, log_summary_barrier, 1 row
    (with the 3 lines before it and the 2 after it)."""
    lines = POLARIS.read_bytes().splitlines(keepends=True)
    at = next(k for k, ln in enumerate(lines) if b"Comm. Op" in ln)
    return b"".join(lines[at - 3:at + 14])


def _load(tmp_path: Path, data: bytes, name: str = "c.log") -> dptrace.Dataset:
    p = tmp_path / name
    p.write_bytes(data)
    return dptrace.load(str(p), format="dscomms")


def _line(data: bytes, marker: bytes) -> int:
    return data[:data.index(marker)].count(b"\n") + 1


@needs_real
def test_the_real_summary_reads_whole(tmp_path: Path) -> None:
    t = _load(tmp_path, _summary())["ds_comms"]
    assert t["op"].tolist() == ["broadcast"] * 8 + ["log_summary_barrier"]


@needs_real
@pytest.mark.parametrize("cell, reason", [("inf KB", "size 'inf KB' is not finite"),
                                          ("nan KB", "size 'nan KB' is not finite"),
                                          ("-5.0 KB", "size '-5.0 KB' is negative")])
def test_a_bad_size_cell_costs_its_row_only(tmp_path: Path, cell: str, reason: str) -> None:
    data = _summary().replace(b"64.0 B  ", cell.encode().ljust(8), 1)
    ds = _load(tmp_path, data)
    t = ds["ds_comms"]
    assert len(t) == 8 and t["op"].tolist() == ["broadcast"] * 7 + ["log_summary_barrier"]
    assert ds.sources["status"].item() == "partial"
    p = ds.problems[ds.problems["message"].str.contains(reason, regex=False)]
    assert p["line"].tolist() == [_line(data, cell.encode())]
    assert "the row is skipped" in p["message"].item()


@needs_real
def test_a_torn_op_line_is_named_and_the_next_op_reads(tmp_path: Path) -> None:
    data = _summary().replace(b"broadcast\n", b"broadcast[rank3]: Epoch 2 done\n", 1)
    ds = _load(tmp_path, data)
    t = ds["ds_comms"]
    assert t["op"].tolist() == ["log_summary_barrier"]   # its 8 rows have no op: skipped
    p = ds.problems[ds.problems["message"].str.contains("not an op line")]
    assert p["line"].tolist() == [_line(data, b"broadcast[rank3]")]
    assert "8 rows under it" in p["message"].item() and p["severity"].item() == "error"
    # an op name with another writer's tag glued on, no space: torn too, not an op name
    data = _summary().replace(b"broadcast\n", b"broadcast[1,3]<stdout>:\n", 1)
    ds = _load(tmp_path, data, "d.log")
    assert ds["ds_comms"]["op"].tolist() == ["log_summary_barrier"]
    assert ds.problems["message"].str.contains("torn").any()


@needs_real
def test_an_op_name_deepspeed_does_not_print_reads_as_given(tmp_path: Path) -> None:
    ds = _load(tmp_path, _summary().replace(b"broadcast\n", b"broad-cast\n", 1))
    assert ds["ds_comms"]["op"].tolist() == ["broad-cast"] * 8 + ["log_summary_barrier"]


def test_a_caller_with_a_space_reads(tmp_path: Path) -> None:
    data = DOCS.read_bytes().replace(b"[Caller Func: _broadcast_model]",
                                     b"[Caller Func: <lambda> at 0x7f]", 1)
    ds = _load(tmp_path, data, "docs.md")
    t = ds["ds_comms"]
    assert len(t) == 6 and not ds.problems["severity"].eq("error").any()
    assert t["caller"].tolist()[3:] == ["<lambda> at 0x7f", "<lambda> at 0x7f",
                                        "reduce_scatter_fn"]
