"""``--actions FILE`` (issue 16, item 10): trusted Python code, said so in --help; imported only
after the pattern file checked; its import errors in one line with file and line."""

import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.runtime.actions import ActionsError, import_actions

ROOT = Path(__file__).resolve().parents[2]
GESTURE = ROOT / "examples" / "gesture" / "gesture.vepl"
EVENTS = ROOT / "examples" / "gesture" / "events.jsonl"
runner = CliRunner()


def _run(tmp_path: Path, actions: Path | str, patterns: Path = GESTURE):
    return runner.invoke(app, ["run", str(patterns), "-i", str(EVENTS), "-o",
                               str(tmp_path / "m.jsonl"), "--actions", str(actions)])


def test_help_says_actions_are_trusted_code() -> None:
    res = runner.invoke(app, ["run", "--help"], env={"COLUMNS": "250"})
    text = re.sub(r"[\s│]+", " ", res.output)
    assert "Trusted Python code" in text and "after the pattern file checks" in text


def test_actions_not_run_when_the_patterns_fail(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    actions = tmp_path / "acts.py"
    actions.write_text(f"open({str(marker)!r}, 'w').close()\n")
    bad = tmp_path / "bad.vepl"
    bad.write_text("atomicEvent A(x: Integer)\ncomplexEvent C { as A(x) -> Missing(x) }\n")
    res = _run(tmp_path, actions, bad)
    assert res.exit_code == 1
    assert "Missing" in res.output
    assert not marker.exists()
    res = _run(tmp_path, actions)  # the same file runs once the patterns check
    assert res.exit_code == 0, res.output
    assert marker.exists()


@pytest.mark.parametrize(("source", "line", "what"), [
    ("x = 1\ndef f(:\n    pass\n", "2:7", "syntax error: invalid syntax"),
    ("import json\nimport no_such_module_cepflow\n", "2",
     "ModuleNotFoundError: No module named 'no_such_module_cepflow'"),
    ("def f():\n    return 1 / 0\n\n\nf()\n", "2", "ZeroDivisionError: division by zero"),
    ("import json\n\njson.loads('{')\n", "3", "JSONDecodeError: Expecting property name"),
    ("raise ValueError('first\\nsecond')\n", "1", "ValueError: first second"),
], ids=["syntax", "missing-module", "exception", "in-a-library", "multi-line-message"])
def test_import_errors_in_one_line_with_file_and_line(tmp_path: Path, source: str, line: str,
                                                     what: str) -> None:
    actions = tmp_path / "acts.py"
    actions.write_text(source)
    res = _run(tmp_path, actions)
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert lines[0].startswith(f"--actions {actions}:{line}: {what}"), lines[0]
    assert "Traceback" not in res.output
    assert not (tmp_path / "m.jsonl").exists()


def test_missing_file_and_module(tmp_path: Path) -> None:
    res = _run(tmp_path, tmp_path / "nope.py")
    assert res.exit_code == 2
    assert res.output.strip() == f"--actions {tmp_path / 'nope.py'}: no such file"
    res = _run(tmp_path, "no_such_package_cepflow.actions")
    assert res.exit_code == 2
    assert res.output.strip().startswith(
        "--actions no_such_package_cepflow.actions: no such module")


def test_failed_module_is_not_left_half_imported(tmp_path: Path) -> None:
    actions = tmp_path / "half.py"
    actions.write_text("X = 1\nraise RuntimeError('no')\n")
    with pytest.raises(ActionsError, match=r"half.py:2: RuntimeError: no"):
        import_actions(str(actions))
    assert "cepflow_actions_half" not in sys.modules
