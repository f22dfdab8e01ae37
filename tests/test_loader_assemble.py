"""loader.assemble: the Dataset of results parsed elsewhere, by the loader's own steps after
parsing, is the one ``load`` gives when those results are what each source's formats read."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import dptrace
from dptrace import api, loader, registry

FIXTURES = Path(__file__).parent / "fixtures"


def _parsed(src: dptrace.sources.Source) -> list[tuple[str, registry.ParseResult]] | None:
    """What each format that claims ``src`` reads of it alone; None when none claims it."""
    try:
        chosen = registry.detect_all(src)
    except Exception:
        return None
    return [(p.name, p.parse(src)) for p in chosen]


def test_assemble_gives_what_load_gives(tmp_path: Path) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    for name in ("alcfws_theta_knl16_mpi_profile.75877.0",
                 "alcfws_thetagpu_cpu8_mpi_profile.176429.0"):
        (folder / name).write_bytes((FIXTURES / "mpitrace" / name).read_bytes())
    (folder / "README").write_text("not a profile\n")
    want = dptrace.load(folder)
    srcs, problems, args, origins = api.expand_arguments(folder)
    got = loader.assemble(srcs, [_parsed(s) for s in srcs], problems, arguments=args,
                          origins=origins)
    pd.testing.assert_frame_equal(got.sources, want.sources)
    pd.testing.assert_frame_equal(got.problems, want.problems)
    pd.testing.assert_frame_equal(got.runs, want.runs)
    assert sorted(got.tables) == sorted(want.tables)
    for name in want.tables:   # read one by one, a category's values come in another order
        pd.testing.assert_frame_equal(got[name], want[name], check_categorical=False)


def test_a_source_not_read_yet_is_empty_with_the_message_given(tmp_path: Path) -> None:
    log = tmp_path / "mpi_profile.7.1"
    log.write_bytes((FIXTURES / "mpitrace" / "alcfws_thetagpu_cpu8_mpi_profile.176429.0")
                    .read_bytes())
    srcs, problems, args, origins = api.expand_arguments(log)   # named: kept as it is
    got = loader.assemble(srcs, [None], problems, arguments=args, origins=origins,
                          unread="not read yet: still written")
    row = got.sources.iloc[0]
    assert (row["format"], row["status"], row["message"]) == (
        "mpitrace", "empty", "not read yet: still written")
    srcs, problems, args, origins = api.expand_arguments(tmp_path)   # found in a folder
    row = loader.assemble(srcs, [None], problems, arguments=args, origins=origins,
                          unread="not read yet: still written").sources.iloc[0]
    assert (row["status"], row["message"]) == ("skipped", "not read yet: still written")
