"""The README stays true: generated schema, documented commands, CI runs its test command."""

import re
from pathlib import Path

from dptrace.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_schema_reference_is_current():
    import importlib.util

    spec = importlib.util.spec_from_file_location("update_readme",
                                                  ROOT / "scripts" / "update_readme.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.render(README) == README, "run: python scripts/update_readme.py"


def test_every_command_and_option_is_documented():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, cmd in sub.choices.items():
        assert f"dptrace {name}" in README
        for action in cmd._actions:
            for opt in action.option_strings:
                if opt.startswith("--") and opt != "--help":
                    assert opt in README, f"{name} {opt} not in README"


def test_exit_codes_documented():
    for code in range(5):   # 4: --fail-on
        assert re.search(rf"^\| {code} \|", README, re.M)


def test_ci_runs_the_readme_test_command():
    blocks = re.findall(r"```bash\n(.*?)\n```", README, re.S)
    test_cmd = next(b for b in blocks if "pytest" in b)
    assert test_cmd in (ROOT / ".ci" / "run").read_text()
