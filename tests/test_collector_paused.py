"""The cyclic collector paused around imports (dptrace.collector_paused, used by the lazy
public names and by the CLI): enabled again after, as it was; frozen only when asked (the
CLI in a process of its own), never by ``main(argv)`` called from a program."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

import dptrace
from dptrace import cli


@pytest.mark.parametrize("enabled", [True, False])
def test_paused_inside_and_as_before_after(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        frozen = gc.get_freeze_count()
        with dptrace.collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() == frozen
        with pytest.raises(ZeroDivisionError), dptrace.collector_paused():
            raise ZeroDivisionError
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def test_main_called_by_a_program_neither_freezes_nor_leaves_it_off(tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_text("{'loss': 1.0, 'train_samples_per_second': 10.5, 'epoch': 1.0}\n")
    frozen = gc.get_freeze_count()
    assert cli.main(["report", str(log), "--json", str(tmp_path / "r.json")]) == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen


def test_the_command_in_a_process_of_its_own_freezes_what_it_imported(tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_text("{'loss': 1.0, 'train_samples_per_second': 10.5, 'epoch': 1.0}\n")
    code = ("import gc, sys; from dptrace import cli; sys.argv = ['dptrace', 'report', "
            f"{str(log)!r}, '--json', {str(tmp_path / 'r.json')!r}]; import io, contextlib\n"
            "with contextlib.redirect_stdout(io.StringIO()): cli.main()\n"
            "print(gc.isenabled(), gc.get_freeze_count() > 1000)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "True"]
