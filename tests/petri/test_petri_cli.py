"""``cepflow petri``: step output, the final marking in CPN Tools' notation and as JSON,
exports, the step-through page, errors; the interactive stepper."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cepflow.cli.main import app
from cepflow.inputs import read_events
from cepflow.loader import load
from cepflow.petri.output import step_text
from cepflow.petri.pnml import read_pnml
from cepflow.petri.stepper import Stepper, interact
from cepflow.petri.translate import translate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EVERY = EXAMPLES / "every"
CONTRACTIONS = EXAMPLES / "contractions"
runner = CliRunner()


def test_final_marking_in_cpn_tools_notation() -> None:
    res = runner.invoke(app, ["petri", str(CONTRACTIONS / "contractions.epl"), "-i",
                              str(CONTRACTIONS / "patients.jsonl"), "--pattern", "Duration"])
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if ln.startswith("Duration: "))
    # (number, time in ms, patientId, delay, the events that made it)
    assert line == ('Duration: 1`(13,840000,"Barbara",5,[4,6])++1`(14,960000,"Alice",4,[5,7])'
                    '++1`(15,1740000,"Alice",4,[10,11])')


def test_steps_as_text_and_json(tmp_path: Path) -> None:
    args = ["petri", str(EVERY / "every.epl"), "-i", str(EVERY / "events.jsonl"), "--steps",
            "--until-step", "5"]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    assert res.output.startswith("step 1  stream.peek.ME  n=1, tt=1000")
    assert "  - stream.next: 1`1\n  + stream.time: 1`(1,1000,1000)" in res.output
    assert "marking of the complex-event places after 5 step(s)" in res.output
    out = tmp_path / "run.json"
    res = runner.invoke(app, [*args[:-2], "--format", "json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = json.loads(out.read_text())
    assert data["finished"] and data["fired"] == len(data["steps"])
    assert data["steps"][0] == {"step": 1, "transition": "stream.peek.ME",
                                "binding": {"n": 1, "tt": 1000, "id": "A", "k": 1},
                                "taken": {"stream.next": [1]},
                                "added": {"stream.time": [[1, 1000, 1000]]}}
    assert [m[-1] for m in data["marking"]["every1"]] == [[1, 2], [5, 8], [10, 12]]


def test_export_pnml_and_cpn_and_the_page(tmp_path: Path) -> None:
    pnml, cpn, page = tmp_path / "net.pnml", tmp_path / "net.cpn", tmp_path / "net.html"
    res = runner.invoke(app, ["petri", str(EVERY / "every.epl"), "--export", str(pnml)])
    assert res.exit_code == 0, res.output
    assert read_pnml(pnml).places.keys() >= {"every1", "every2", "ME", "stream.next"}
    res = runner.invoke(app, ["petri", str(EVERY / "every.epl"), "-i",
                              str(EVERY / "events.jsonl"), "--export", str(cpn),
                              "--html", str(page)])
    assert res.exit_code == 0, res.output
    assert cpn.read_text(encoding="iso-8859-1").count("<page ") >= 3
    assert 'id="petri-run"' in page.read_text()
    res = runner.invoke(app, ["petri", str(EVERY / "every.epl"), "--export",
                              str(tmp_path / "net.xml")])
    assert res.exit_code == 2 and "must end in .pnml or .cpn" in res.output


def test_errors_are_one_line_each(tmp_path: Path) -> None:
    res = runner.invoke(app, ["petri", str(EVERY / "every.epl"), "--pattern", "nope"])
    assert res.exit_code == 2 and "no complex event 'nope'" in res.output
    bad = tmp_path / "p.vepl"
    bad.write_text("atomicEvent A(x: Integer)\natomicEvent B(x: Integer)\n"
                   "complexEvent P(x: Integer) {\n  as A(x) -> B(x)\n  context unrestricted\n"
                   "}\n")
    res = runner.invoke(app, ["petri", str(bad)])
    assert res.exit_code == 1
    assert f"{bad}:3:14: cannot translate context unrestricted in statement 'P'" in res.output
    res = runner.invoke(app, ["petri", str(EVERY / "every.epl"), "-i",
                              str(tmp_path / "missing.jsonl")])
    assert res.exit_code == 2 and "missing.jsonl" in res.output


def test_the_interactive_stepper_goes_forward_and_back() -> None:
    prog = load(EVERY / "every.epl")
    tr = translate(prog, list(read_events(EVERY / "events.jsonl", prog.schemas)))
    sim = tr.simulator(seed=2)
    commands = iter(["n 3", "b 2", "", "t every1.emit", "p every1", "g 0", "m", "e", "x",
                     "q"])
    out: list[str] = []
    stepper = Stepper(sim)
    interact(stepper, lambda _: next(commands), out.append,
             lambda s: step_text(tr.net, s),
             lambda p: f"{p}: {len(sim.marking[p])} token(s)",
             lambda: "summary")
    text = "\n".join(out)
    assert "step 3  " in text and "back 2 step(s), at step 1" in text
    assert text.count("step 2  stream.instant") == 2  # the same step again after going back
    assert "every1.emit" in text and "every1: 1 token(s)" in text
    assert "at step 0" in text and "summary" in text and "stream.peek.ME" in text
    assert stepper.at == 0 and not sim.trace
    # back at the start, the run is the same as a fresh one
    first = [s.transition for s in stepper.next(8)]
    fresh = tr.simulator(seed=2)
    assert first == [fresh.step().transition for _ in range(8)]


def test_interactive_needs_a_terminal() -> None:
    res = runner.invoke(app, ["petri", str(EVERY / "every.epl"), "-i",
                              str(EVERY / "events.jsonl"), "--interactive"])
    assert res.exit_code == 2 and "--interactive needs a terminal" in res.output
