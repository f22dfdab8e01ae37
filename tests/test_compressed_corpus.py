"""The compressed-input classes of the bad-input corpus (tests/corpus/compressed.tsv, made by
tests/corpus/compressed_classes.py): each row goes through test_corpus.py's own test
(``dptrace.load`` under an alarm, ``dptrace report --json --html`` as the CLI's main in
this process, the outcome the row states), with the row's environment (``env``: the gz event
bomb's low ``DPTRACE_MAX_DECOMPRESSED``, which both the load and the report read).
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).parent / "corpus"
sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(CORPUS))
import compressed_classes  # noqa: E402
import test_corpus  # noqa: E402


def _rows() -> list[dict[str, str]]:
    with open(CORPUS / "compressed.tsv", encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


ROWS = _rows()


@pytest.mark.parametrize("row", ROWS, ids=[r["class"] for r in ROWS])
def test_compressed_corpus_class(row: dict[str, str], tmp_path: Path, request,
                                 monkeypatch) -> None:
    for item in row["env"].split():
        name, _, value = item.partition("=")
        monkeypatch.setenv(name, value)
    test_corpus.test_corpus_class(row, tmp_path, request, monkeypatch)


def test_compressed_corpus_is_complete_and_small() -> None:
    """Every file of files_compressed/ is a row, every row's file is there, each < 50 KB,
    and the script makes each class (compressors' bytes vary with library versions: the
    files are checked to exist, their damage is what the classes test)."""
    listed = {Path(r["file"]).name for r in ROWS}
    on_disk = {p.name for p in compressed_classes.OUT.iterdir()}
    assert listed == on_disk
    assert {k["cls"] for k in compressed_classes.classes()} == {r["class"] for r in ROWS}
    for p in compressed_classes.OUT.iterdir():
        assert p.stat().st_size < 50_000, p
