"""The command line: check, run, explain and graph on real files."""

import json
from pathlib import Path

from typer.testing import CliRunner

from cepflow.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
GESTURE = ROOT / "examples" / "gesture" / "gesture.vepl"
EVENTS = ROOT / "examples" / "gesture" / "events.jsonl"
runner = CliRunner()


def test_check_ok() -> None:
    res = runner.invoke(app, ["check", str(GESTURE)])
    assert res.exit_code == 0, res.output
    assert "ok" in res.output


def test_check_reports_every_error_located(tmp_path: Path) -> None:
    bad = tmp_path / "bad.vepl"
    bad.write_text("atomicEvent a(x: Integer)\n"
                   "complexEvent C(x: Integer) {\n"
                   "  as a(x) -> missing(x)\n"
                   "}\n"
                   "complexEvent D() { as a(y, z) }\n")
    res = runner.invoke(app, ["check", str(bad)])
    assert res.exit_code == 1
    lines = [ln for ln in res.output.splitlines() if ": error:" in ln]
    assert any(ln.startswith(f"{bad}:3:14: error:") and "missing" in ln for ln in lines), lines
    assert any(ln.startswith(f"{bad}:5:") for ln in lines), lines


def test_check_syntax_error_position(tmp_path: Path) -> None:
    bad = tmp_path / "syntax.vepl"
    bad.write_text("atomicEvent a\ncomplexEvent C() {\n  as a -> -> a\n}\n")
    res = runner.invoke(app, ["check", str(bad)])
    assert res.exit_code == 1
    assert f"{bad}:3:11:" in res.output


def test_run_writes_matches_and_side_channel(tmp_path: Path) -> None:
    events = tmp_path / "ev.jsonl"
    lines = EVENTS.read_text().splitlines()[:60]
    lines.insert(5, '{"type": "ForwardStartFound", "ts": "yesterday", "B": "body0"}')
    lines.insert(9, "not json")
    events.write_text("\n".join(lines) + "\n")
    out = tmp_path / "m.jsonl"
    res = runner.invoke(app, ["run", str(GESTURE), "-i", str(events), "-o", str(out)])
    assert res.exit_code == 0, res.output
    matches = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert len(matches) == 8 and matches[0]["pattern"] == "ForwardGesture"
    assert set(matches[0]) >= {"pattern", "ts", "params", "events"}
    rejected = [json.loads(ln) for ln in out.with_suffix(".rejected.jsonl").read_text()
                .splitlines()]
    assert len(rejected) == 2
    assert {r["location"].split(",")[0] for r in rejected} == {"line 6", "line 10"}


def test_graph_and_explain() -> None:
    res = runner.invoke(app, ["graph", str(GESTURE), "ForwardGesture"])
    assert res.exit_code == 0
    assert res.output.startswith('digraph "ForwardGesture"') and "q3 -> f" in res.output
    res = runner.invoke(app, ["explain", str(GESTURE), "-i", str(EVENTS), "--pattern",
                              "ForwardGesture"])
    assert res.exit_code == 0
    assert "100 match, 0 trap, 0 disposed, 0 partial" in res.output


def test_run_on_spark_equals_local(tmp_path: Path, spark) -> None:  # spark: the shared session
    local, remote = tmp_path / "local.jsonl", tmp_path / "spark.jsonl"
    assert runner.invoke(app, ["run", str(GESTURE), "-i", str(EVENTS), "-o", str(local)]
                         ).exit_code == 0
    res = runner.invoke(app, ["run", str(GESTURE), "-i", str(EVENTS), "-o", str(remote),
                              "--engine", "spark"])
    assert res.exit_code == 0, res.output
    assert sorted(local.read_text().splitlines()) == sorted(remote.read_text().splitlines())
