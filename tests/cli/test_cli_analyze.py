"""``cepflow analyze``: formats, outputs, exit codes and errors."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cepflow.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
MOTORBIKE = str(ROOT / "examples" / "motorbike" / "motorbike.epl")
runner = CliRunner()


def test_text_lists_levels_races_and_findings() -> None:
    res = runner.invoke(app, ["analyze", MOTORBIKE])
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert "4 levels, no cycle" in out
    assert "level 3: AccidentsReport" in out
    assert "races: 3" in out and "boundary: Accident / AccidentsReport" in out
    assert "priorities by level (--fix):" in out


def test_json_is_one_object_of_the_documented_shape(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    res = runner.invoke(app, ["analyze", MOTORBIKE, "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert {"nodes", "edges", "levels", "cycles", "races", "findings"} <= set(doc)
    assert {"id", "kind", "file", "line"} <= set(doc["nodes"][0])
    assert {"from", "to"} <= set(doc["edges"][0])
    assert doc["levels"]["AccidentsReport"] == 3
    race = doc["races"][0]
    assert {"patterns", "types", "why", "fix"} <= set(race) and len(race["patterns"]) == 2
    finding = doc["findings"][0]
    assert set(finding) == {"severity", "code", "location", "message", "fix"}
    assert finding["location"].startswith(MOTORBIKE + ":")


def test_dot_has_one_rank_per_level() -> None:
    res = runner.invoke(app, ["analyze", MOTORBIKE, "--format", "dot"])
    assert res.exit_code == 0
    assert res.stdout.startswith("digraph")
    assert res.stdout.count("rank=same") == 4


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz")
def test_svg_and_html(tmp_path: Path) -> None:
    svg = tmp_path / "g.svg"
    assert runner.invoke(app, ["analyze", MOTORBIKE, "-o", str(svg)]).exit_code == 0
    assert "<svg" in svg.read_text()
    page = tmp_path / "a.html"
    assert runner.invoke(app, ["analyze", MOTORBIKE, "-o", str(page)]).exit_code == 0
    text = page.read_text()
    assert "<svg" in text and "Findings" in text and 'id="analysis"' in text


def test_errors_exit_1_and_name_the_place(tmp_path: Path) -> None:
    bad = tmp_path / "bad.vepl"
    bad.write_text("atomicEvent A(x: Integer)\ncomplexEvent P(x: Integer) { as Z(x) }\n")
    res = runner.invoke(app, ["analyze", str(bad)])
    assert res.exit_code == 1
    assert f"{bad}:2:" in res.stderr and "undeclared" in res.stderr
    never = tmp_path / "never.vepl"
    never.write_text("atomicEvent A(x: Integer)\n"
                     "complexEvent P(x: Integer) { as A(x) where x > 5 and x < 1 }\n")
    res = runner.invoke(app, ["analyze", str(never)])
    assert res.exit_code == 1 and "[contradiction]" in res.stdout
    missing = runner.invoke(app, ["analyze", str(tmp_path / "nope.vepl")])
    assert missing.exit_code == 2


def test_a_cyclic_set_is_analysed(tmp_path: Path) -> None:
    cyc = tmp_path / "cyc.vepl"
    cyc.write_text("atomicEvent A(x: Integer)\n"
                   "complexEvent B(x: Integer) { as A(x) OR C(x) }\n"
                   "complexEvent C(x: Integer) { as B(x) }\n")
    res = runner.invoke(app, ["analyze", str(cyc), "-f", "json"])
    assert res.exit_code == 1  # the cycle can fire at one instant: an error finding
    doc = json.loads(res.stdout)
    assert doc["cycles"] == [["B", "C"]]
    assert [f["code"] for f in doc["findings"]] == ["cycle"]
