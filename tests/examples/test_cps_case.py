"""The CPS case study (000 §6.4, Fig. 13) step by step, and `cepflow demo cps` end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.runtime.actions import import_actions

CPS = Path(__file__).resolve().parents[2] / "examples" / "cps"
case = import_actions(str(CPS / "cps_case.py"))


def test_fig13_step_by_step():
    run = case.run_scenario()
    p1, p2a, p2b, p34 = run.steps
    # Phase 1: availableCpu 10 > totalCpu 8 — a new match, one invalidModel event (Step 1a)
    assert (p1.phase, p1.query_events, p1.complex_events, p1.valid) == (
        "Phase 1", ["invalidModel(h1)"], [], False)
    # Phase 2: further modifications, the issue persists: one more invalidModel each;
    # the third one matches tolerationRange and the rule notifies DSE (Step 1b)
    assert (p2a.query_events, p2a.complex_events, p2a.fixes) == (["invalidModel(h1)"], [], [])
    assert p2b.query_events == ["invalidModel(h1)"]
    assert p2b.complex_events == ["tolerationRange(h1)"]
    # Phase 3: DSE reads the model (available 10, total 8) and offers two quick fixes
    assert p2b.fixes == ["decreaseAvailableCpu(host=h1, available=10, total=8)",
                         "increaseTotalCpu(host=h1, available=10, total=8)"]
    assert not p2b.valid
    # Phase 4: the user's choice (the former) is applied; the host is valid again
    assert p34.query_events == ["validModel(h1)"] and p34.valid
    s = run.summary
    assert s["fix_applied"] == "decreaseAvailableCpu(host=h1, available=10, total=8)"
    assert s["valid_at_end"] is True
    assert s["h1"] == {"availableCpu": 8, "totalCpu": 8}
    assert (s["invalid_model_events"], s["valid_model_events"], s["toleration_matches"]) == (
        3, 1, 1)
    assert s["stats"]["rule_firings"] == 1 and s["dse"]["solutions"] == 2


def test_the_other_fix_raises_the_total():
    s = case.run_scenario(choice=1).summary
    assert s["fix_applied"] == "increaseTotalCpu(host=h1, available=10, total=8)"
    assert s["h1"] == {"availableCpu": 10, "totalCpu": 10} and s["valid_at_end"]


def test_demo_cps_cli_prints_steps_and_a_json_summary():
    result = CliRunner().invoke(app, ["demo", "cps"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert any("tolerationRange(h1)" in line for line in lines)
    assert any("quick fix 2: increaseTotalCpu" in line for line in lines)
    summary = json.loads(lines[-1])
    assert summary["fixes_offered"] == [
        "decreaseAvailableCpu(host=h1, available=10, total=8)",
        "increaseTotalCpu(host=h1, available=10, total=8)"]
    assert summary["fix_applied"].startswith("decreaseAvailableCpu")
    assert summary["valid_at_end"] is True


@pytest.mark.parametrize("args, code, text", [
    (["demo", "cps", "--choice", "3"], 2, "choice 3 is not one of the 2 quick fixes"),
    (["demo", "cps", "--dir", "/nonexistent"], 2, "not found"),
])
def test_demo_cps_bad_arguments(args, code, text):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == code
    assert text in result.output
