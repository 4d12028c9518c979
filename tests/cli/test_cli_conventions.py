"""CLI conventions (issue 16, item 9): ``--version``; ``-h`` on the app and every command;
``--engine`` and ``--context`` list their choices in ``--help`` and refuse others."""

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cepflow
from cepflow.cli.common import load_patterns
from cepflow.cli.main import ContextName, app
from cepflow.language.ast import CONTEXTS

ROOT = Path(__file__).resolve().parents[2]
GESTURE = ROOT / "examples" / "gesture" / "gesture.vepl"
runner = CliRunner()

COMMANDS = [[], ["check"], ["run"], ["stream"], ["explain"], ["graph"], ["demo"],
            ["demo", "cps"], ["demo", "gesture"], ["demo", "path"]]


def _plain(text: str) -> str:
    """Help text without rich's box drawing and line wrapping, for searching."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return re.sub(r"[\s│╭╮╰╯─]+", " ", text)


def _help(command: list[str]) -> str:
    """``--help`` of a command on a wide terminal (no wrapping inside the choices)."""
    return runner.invoke(app, [*command, "--help"], env={"COLUMNS": "250"}).output


def test_version() -> None:
    res = runner.invoke(app, ["--version"])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == f"cepflow {cepflow.__version__}"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "cepflow")
def test_dash_h_is_help_everywhere(command: list[str]) -> None:
    short = runner.invoke(app, [*command, "-h"])
    long = runner.invoke(app, [*command, "--help"])
    assert short.exit_code == 0, short.output
    assert "Usage:" in short.output
    assert short.output == long.output


@pytest.mark.parametrize("command", [["run"], ["explain"], ["stream"]])
def test_context_choices_in_help(command: list[str]) -> None:
    text = _plain(_help(command))
    assert "|".join(CONTEXTS) in text


@pytest.mark.parametrize("command", [["run"], ["demo", "gesture"]])
def test_engine_choices_in_help(command: list[str]) -> None:
    text = _plain(_help(command))
    assert "local|spark" in text


def test_unknown_engine_and_context_refused_before_any_work(tmp_path: Path) -> None:
    out = tmp_path / "m.jsonl"
    for option, value in (("--engine", "flink"), ("--context", "eventually")):
        res = runner.invoke(app, ["run", str(GESTURE), "-i", str(GESTURE), "-o", str(out),
                                  option, value])
        assert res.exit_code == 2
        assert value in _plain(res.output) and "is not one of" in _plain(res.output)
    assert not out.exists()


def test_context_choice_compiles_like_the_library() -> None:
    """The choice reaches the compiler as the plain context name: the same program (and
    fingerprint, which saved states carry) as ``cepflow.load(..., context=...)``."""
    from cepflow.automaton.context import Context

    program = load_patterns(GESTURE, ContextName("strict"))
    assert {a.context for a in program.automata} == {Context.STRICT}
    assert program.fingerprint == cepflow.load(GESTURE, context="strict").fingerprint
