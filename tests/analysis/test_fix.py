"""``--fix``: priorities by level, written in both syntaxes; the fixed set has no race and
the engine honours the priorities."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import cepflow
from cepflow.analysis import analyze, analyze_set
from cepflow.analysis.fix import FixError, fixed_module, write_fixed
from cepflow.analysis.patternset import from_text
from cepflow.cli.main import app
from cepflow.events.event import Event
from cepflow.runtime.engine import run_patterns

ROOT = Path(__file__).resolve().parents[2]
MOTORBIKE = ROOT / "examples" / "motorbike"


def _bike(ts: int, speed: int, tire1: float, seat: bool) -> Event:
    return Event("Motorbike", (ts // 1000, 3, "Sevilla", speed, tire1, 2.5, seat), ts)


@pytest.mark.parametrize("source, target", [("motorbike.epl", "fixed.epl"),
                                            ("motorbike.vepl", "fixed.vepl"),
                                            ("motorbike.epl", "fixed.vepl"),
                                            ("motorbike.vepl", "fixed.epl")])
def test_the_fixed_motorbike_set_has_no_race(tmp_path: Path, source: str, target: str) -> None:
    a = analyze([MOTORBIKE / source])
    assert len(a.races) == 3
    out = write_fixed(a, tmp_path / target)
    fixed = analyze([out])
    assert fixed.races == [] and len(fixed.resolved) == 3
    prio = {d.name: d.priority for d in fixed.pset.module.decls if hasattr(d, "priority")}
    assert prio == a.plan.priorities
    assert prio["Crash"] > prio["DriverLeftSeat"] and prio["Accident"] > prio["AccidentsReport"]
    assert fixed.plan.priorities == a.plan.priorities  # the fix is a fixed point
    # apart from the priorities, the same set
    unfixed = fixed_module(a)
    assert [d.name for d in fixed.pset.module.decls] == [d.name for d in unfixed.decls]


def test_the_fixed_set_detects_what_the_race_lost(tmp_path: Path) -> None:
    """One Motorbike event ends both Crash and DriverLeftSeat: the set as written misses the
    Accident (DriverLeftSeat, declared first, comes first); the fixed set has it."""
    stream = [_bike(0, 80, 2.5, True), _bike(1000, 60, 1.0, True), _bike(2000, 0, 1.0, False)]
    before = [c.type for c in run_patterns(cepflow.load(MOTORBIKE / "motorbike.epl"), stream)]
    assert "Accident" not in before
    out = write_fixed(analyze([MOTORBIKE / "motorbike.epl"]), tmp_path / "fixed.epl")
    after = [c.type for c in run_patterns(cepflow.load(out), stream)]
    assert after.count("Accident") == 1
    assert after.index("Crash") < after.index("DriverLeftSeat")


def test_a_cyclic_set_has_no_fix() -> None:
    a = analyze_set(from_text("atomicEvent A(x: Integer)\n"
                              "complexEvent B(x: Integer) { as A(x) OR C(x) }\n"
                              "complexEvent C(x: Integer) { as B(x) }\n"))
    with pytest.raises(FixError, match="cycle"):
        fixed_module(a)


def test_epl_cannot_say_vepl_parameters(tmp_path: Path) -> None:
    a = analyze([ROOT / "examples" / "gesture" / "gesture.vepl"])
    with pytest.raises(FixError, match="cepflow syntax"):
        write_fixed(a, tmp_path / "g.epl")
    assert not (tmp_path / "g.epl").exists()
    fixed = analyze([write_fixed(a, tmp_path / "g.vepl")])
    assert fixed.races == []


def test_cli_fix(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "fixed.epl"
    res = runner.invoke(app, ["analyze", str(MOTORBIKE / "motorbike.epl"), "--fix", str(out),
                              "-o", str(tmp_path / "a.json")])
    assert res.exit_code == 0, res.output
    assert "@Priority(4)" in out.read_text()
    again = runner.invoke(app, ["analyze", str(out)])
    assert "races: 0 (3 more ordered by the set's priorities)" in again.stdout
    bad = runner.invoke(app, ["analyze", str(ROOT / "examples" / "gesture" / "gesture.vepl"),
                              "--fix", str(tmp_path / "g.epl")])
    assert bad.exit_code == 1 and "--fix" in bad.stderr
