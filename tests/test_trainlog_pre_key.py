"""The fast engine reads what precedes a tqdm update's count by a key, the text cut before its
bar's percentage (``fast._pre_key_end``): the key must give what the whole text gives
(``general._pre_info``: launcher prefix, bar label, epoch) for every text, not only for the
shapes a dense log prints."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

from dptrace.formats.trainlog import fast, general, rules

PREFIXES = ("", "3: ", " 12: ", "3:", "[1,3]<stdout>:", "[1,3]<stdout>: ", "[rank3]:",
            "[rank3] ", "[rank3]", "[default3]:", "[3] ", "[3]", "\t7: ", "12")
DESCRIPTIONS = ("", "Epoch 3", "Epoch 3: ", "Training:  ", "a%|b ", "x 5%|", "Epoch ²",
                "12", "[rank3]", "Validation DataLoader 0: ", "eval 2/3 ", "%|", "3: ",
                "Epoch 10/20 ", "步骤 ", " ")
PERCENTS = ("", "5", "45", "100", "²5", "٣", "0", "²")
BARS = ("%|", "%| ", "%|██▌       | ", "%|####5     | ", "%|x%|y| ", "% ", "|", "")


def _same(pre: str) -> None:
    key = pre[:fast._pre_key_end(pre, 0, len(pre))]
    general._PRE.clear()
    assert general._pre_info(key) == general._pre_info(pre), (pre, key)


def test_every_combination_reads_alike() -> None:
    for parts in itertools.product(PREFIXES, DESCRIPTIONS, PERCENTS, BARS):
        _same("".join(parts))


def test_random_texts_read_alike() -> None:
    rng = random.Random(31)
    alphabet = "0123456789%|: []<>,abrnkdefault\t²٣█▌#"
    for _ in range(20_000):
        _same("".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 14))))


def test_pre_groups_of_real_logs_read_alike() -> None:
    """Every update's ``pre`` group in the tqdm lines of the real logs and fixtures."""
    roots = [Path(__file__).parent / "fixtures", Path(__file__).parents[2] / "shared" / "realdata"]
    seen = 0
    for root in roots:
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            if not path.is_file() or path.stat().st_size > 8 << 20:
                continue
            text = path.read_bytes().decode("utf-8", "replace")
            if "\r" not in text or "it/s" not in text and "s/it" not in text:
                continue
            for line in text.splitlines():
                for seg in line.split("\r"):
                    m = rules.TQDM_SEGMENT.fullmatch(seg)
                    if m:
                        _same(m["pre"])
                        seen += 1
    assert seen > 1000
