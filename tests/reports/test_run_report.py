"""The run report (issue 22.1): what a run's trace keeps at each step, what the page shows of
each case study, how a large input is sampled, and the CLI (``run --report``, ``report``)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cepflow
from cepflow.cli.main import app
from cepflow.replay import replay
from cepflow.reports.record import Limits, Reservoir, RunRecord, lane_keys
from cepflow.reports.run import run_page
from cepflow.runtime.engine import Engine
from cepflow.timefmt import instant_text
from report_cases import CASES, EXAMPLES, run_data

runner = CliRunner()

WINDOWED = """
atomicEvent A(k: String, v: Integer)
atomicEvent B(k: String, v: Integer)
complexEvent P(k: String) { as (A(k, x) -> B(k, y))[5 s] }
"""


def events(*rows: tuple[str, int, str, int]) -> list[cepflow.Event]:
    return [cepflow.Event(t, (k, v), ts, id=f"e{i}") for i, (t, ts, k, v) in enumerate(rows)]


def test_the_trace_keeps_bindings_and_deadlines_at_each_step() -> None:
    program = cepflow.load(WINDOWED)
    engine = Engine(program, trace=True)
    for e in events(("A", 1000, "a", 1), ("B", 2500, "a", 2)):
        engine.process(e)
    entries = engine.trace.entries
    start, step, match = entries
    assert start["kind"] == "start" and step["kind"] == "step" and match["kind"] == "match"
    # after the A: k and x are bound, the window ends 5 s after it
    assert start["threads"] == [{"bindings": {"k": "a", "x": 1}, "deadlines": [[0, 6000]]}]
    assert step["threads"][0]["bindings"] == {"k": "a", "x": 1, "y": 2}
    assert match["match"] >= 1 and match["bindings"] == {"k": "a", "x": 1, "y": 2}


def test_an_engine_traces_into_a_trace_of_its_own() -> None:
    program = cepflow.load(WINDOWED)
    record = RunRecord(program)
    engine = Engine(program, trace=record)
    assert engine.trace is record


def test_lanes_follow_the_keys_the_patterns_correlate_on() -> None:
    program = cepflow.load(EXAMPLES / "motorbike" / "motorbike.epl")
    assert lane_keys(program)["Motorbike"] == (1, "motorbikeId")
    assert lane_keys(cepflow.load(WINDOWED)) == {"A": (0, "k"), "B": (0, "k")}


def test_the_reservoir_is_uniform_and_the_same_every_time() -> None:
    def sample(seed: int) -> list[int]:
        r = Reservoir(100, seed)
        for i in range(10_000):
            r.offer(i)
        return sorted(r.items)

    a = sample(1)
    assert a == sample(1) and len(a) == 100
    # spread over the whole stream, not the first items
    assert Counter(i // 2500 for i in a).keys() == {0, 1, 2, 3}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_case_study_shows_every_match_with_its_story(case_reports, name: str) -> None:
    case = case_reports[name]
    data = case.data()
    tl = data["timeline"]
    assert tl["complete"]
    assert len(tl["matches"]) == tl["matches_total"] == len(case.matches)
    # each match's events, by id, are those of the run's output record
    shown = sorted((m["p"], [tl["ev_id"][i] for i in m["ev"]]) for m in tl["matches"])
    written = sorted((m["pattern"], m["events"]) for m in case.matches)
    assert shown == written
    stories = data["stories"]
    for m in tl["matches"]:
        if m["story"] < 0:  # a window statement's row: no automaton
            continue
        story = stories[m["story"]]
        assert story["outcome"] == "match" and story["steps"][-1]["kind"] == "match"
        assert stories[m["story"]]["match"] == tl["matches"].index(m)
        assert all(s["time"] == instant_text(s["ts"]) for s in story["steps"])
    page = case.html.read_text(encoding="utf-8")
    assert page.count('class="automaton"') == len({s["pattern"] for s in stories})


def test_a_large_input_is_binned_and_sampled(tmp_path: Path) -> None:
    program = cepflow.load(EXAMPLES / "gesture" / "gesture.vepl")
    limits = Limits(events=50, matches=7, partials=3, lanes=2, bins=40)
    record = RunRecord(program, limits)
    result = replay([EXAMPLES / "gesture" / "events.jsonl"], program, tmp_path / "m.jsonl",
                    record=record)
    assert result.complex_events == 100
    page = run_page(record, result, "gesture")
    tl = run_data(page.html())["timeline"]
    assert not tl["complete"] and tl["events_total"] == result.events == 600
    assert len(tl["matches"]) == 7 and tl["matches_total"] == 100
    # only the events of the matches shown are on the page, the bins count them all
    assert len(tl["ev_ts"]) == 7 * 4
    assert sum(tl["bins"]["count"]) == 600 and max(tl["bins"]["bin"]) < 40
    # two rows and the rest folded into one
    assert len(tl["lanes"]) == 3 and tl["lanes"][-1].startswith("other (")
    # the matches are spread over the run, not the first seven
    written = [json.loads(x) for x in (tmp_path / "m.jsonl").read_text().splitlines()]
    assert max(m["ts"] for m in tl["matches"]) > written[len(written) // 2]["ts"]
    shown = {tuple(tl["ev_id"][i] for i in m["ev"]) for m in tl["matches"]}
    assert shown <= {tuple(m["events"]) for m in written}
    html = page.html()
    assert "7 of 100 matches are shown" in html


def test_partial_matches_that_died_and_were_left(tmp_path: Path) -> None:
    program = cepflow.load(WINDOWED)
    src = tmp_path / "e.jsonl"
    src.write_text("\n".join(json.dumps(r) for r in [
        {"type": "A", "ts": 0, "k": "a", "v": 1}, {"type": "A", "ts": 100, "k": "b", "v": 1},
        {"type": "B", "ts": 9000, "k": "a", "v": 2}, {"type": "A", "ts": 9500, "k": "c", "v": 3},
    ]) + "\n")
    record = RunRecord(program)
    result = replay([src], program, tmp_path / "m.jsonl", record=record)
    data = run_data(run_page(record, result, "w").html())
    outcomes = sorted((s["outcome"], s["steps"][-1]["kind"]) for s in data["stories"])
    # a and b expired (their window closed at the B's time), c is left waiting
    assert outcomes == [("partial", "start"), ("trap", "trap"), ("trap", "trap")]
    assert record.died_reasons == {("P", "trap", "window of 5 s expired"): 2}
    left = next(s for s in data["stories"] if s["outcome"] == "partial")
    assert left["steps"][0]["threads"][0]["deadlines"][0]["text"] == "14500 ms"
    assert left["steps"][0]["event"] == {"id": "3", "type": "A", "params": {"k": "c", "v": 3}}


def test_rejected_records_are_listed_by_reason_with_file_and_line(tmp_path: Path) -> None:
    src = tmp_path / "bad.jsonl"
    src.write_text('{"type": "ME", "ts": 1000, "params": ["A", 1]}\n'
                   '{"type": "ME", "ts": 2000, "params": ["B", "x"]}\n'
                   '{"type": "ME", "ts": 3000, "params": ["B", "y"]}\n'
                   '{"type": "ME", "ts": 500, "params": ["C", 1]}\n')
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(EXAMPLES / "every" / "every.epl"), "-i", str(src),
                              "-o", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    page = out.read_text(encoding="utf-8")
    assert "expected Integer, got &#x27;…&#x27;" in page  # one reason for both records
    assert "line 2" in page and "line 3" in page and "line 4" in page
    assert "late by N ms" in page
    assert not (tmp_path / "-").exists()


def test_run_writes_its_report_and_report_writes_only_the_report(tmp_path: Path) -> None:
    pattern = str(EXAMPLES / "every" / "every.epl")
    src = str(EXAMPLES / "every" / "events.jsonl")
    res = runner.invoke(app, ["report", pattern, "-i", src, "-o", str(tmp_path / "r.html"),
                              "--no-progress"])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.html"]
    res = runner.invoke(app, ["report", pattern, "-i", src, "-o", "-", "--no-progress"])
    assert res.exit_code == 0 and res.stdout.startswith("<!DOCTYPE html>")
    # an unwritable report is refused before the run writes anything
    (tmp_path / "file").write_text("")
    res = runner.invoke(app, ["run", pattern, "-i", src, "-o", str(tmp_path / "m.jsonl"),
                              "--report", str(tmp_path / "file" / "r.html")])
    assert res.exit_code == 2 and not (tmp_path / "m.jsonl").exists()
    assert "file/r.html: cannot write" in res.output


def test_without_graphviz_the_step_through_shows_the_dot_text(tmp_path: Path, monkeypatch
                                                              ) -> None:
    import cepflow.automaton.dot as dot

    monkeypatch.setattr(dot.shutil, "which", lambda name: None)
    program = cepflow.load(WINDOWED)
    record = RunRecord(program)
    src = tmp_path / "e.jsonl"
    src.write_text('{"type": "A", "ts": 0, "k": "a", "v": 1}\n'
                   '{"type": "B", "ts": 10, "k": "a", "v": 2}\n')
    result = replay([src], program, tmp_path / "m.jsonl", record=record)
    page = run_page(record, result, "w").html()
    assert "drawing needs Graphviz" in page and "digraph" in page
