"""``graph`` and ``explain`` as people read them (issue 16, item 9): times as ISO-8601 or ms
and durations in units, never ``1.71456e+12``; a NOT edge keeps its filter; window statements
are drawn; SVG/PNG/PDF without Graphviz are refused in one line with the install command,
leaving no file."""

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cepflow
from cepflow.automaton.dot import RenderError, render, to_dot, window_to_dot
from cepflow.cli.main import app
from cepflow.timefmt import duration_text, instant_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
runner = CliRunner()
EXPONENT = re.compile(r"\d\.?\d*e[+-]\d+")


def test_instants_and_durations() -> None:
    assert instant_text(1714559712345) == "2024-05-01T10:35:12.345Z"
    assert instant_text(1714559712000.0) == "2024-05-01T10:35:12.000Z"
    assert instant_text(1714559712345.5) == "2024-05-01T10:35:12.345500Z"
    assert instant_text(1500) == "1500 ms"
    assert instant_text(1234567) == "1234567 ms"
    assert instant_text(0.25) == "0.25 ms"
    assert instant_text(1e20) == "100000000000000000000 ms"  # after the year 9999
    assert duration_text(86_400_000) == "1 d"
    assert duration_text(5000) == "5 s"
    assert duration_text(1500) == "1500 ms"
    assert duration_text(90_000) == "90 s"
    assert duration_text(1234.5) == "1234.5 ms"


def test_explain_prints_epoch_times_as_iso_8601() -> None:
    res = runner.invoke(app, ["explain", str(EXAMPLES / "motorbike" / "motorbike.vepl"), "-i",
                              str(EXAMPLES / "motorbike" / "accident.jsonl"), "--pattern",
                              "BlowOutTire"])
    assert res.exit_code == 0, res.output
    steps = [ln for ln in res.output.splitlines() if ln.startswith("    @")]
    assert steps and not any(EXPONENT.search(ln) for ln in steps), steps
    # accident.jsonl's m1 is at 1488330000000 ms
    assert "    @2017-03-01T01:00:00.000Z event m1: q0 -> q1" in res.output


def test_explain_reasons_give_durations_in_units(tmp_path: Path) -> None:
    patterns = tmp_path / "p.vepl"
    patterns.write_text("atomicEvent A(x: Integer)\natomicEvent B(x: Integer)\n"
                        "complexEvent C(x: Integer) { as (A(x) -> B(x))[1 d] }\n")
    events = tmp_path / "e.jsonl"
    events.write_text('{"type": "A", "ts": 1000, "x": 1}\n'
                      '{"type": "B", "ts": 200000000, "x": 1}\n')
    res = runner.invoke(app, ["explain", str(patterns), "-i", str(events)])
    assert res.exit_code == 0, res.output
    assert "@86401000 ms time: -> x (trap): window of 1 d expired" in res.output
    assert not EXPONENT.search(res.output), res.output


def test_dot_keeps_the_filter_of_a_not_edge() -> None:
    program = cepflow.load(EXAMPLES / "temperature" / "alerts.vepl")
    dot = to_dot(program.automaton("Warning"))
    negative = [ln for ln in dot.splitlines() if "¬ TemperatureEvent" in ln]
    assert negative and all("where temperature <= 400" in ln for ln in negative), negative


def test_dot_zone_lengths_in_units() -> None:
    program = cepflow.load(EXAMPLES / "motorbike" / "motorbike.vepl")
    assert "zone 0: within 5 s" in to_dot(program.automaton("BlowOutTire"))


def test_dot_escapes_label_text(tmp_path: Path) -> None:
    """A filter's string with a backslash or a quote stays text, not a DOT escape."""
    patterns = tmp_path / "p.vepl"
    patterns.write_text('atomicEvent A(s: String)\n'
                        'complexEvent C { as A(_) where s == "a\\\\l\\"b" }\n')
    dot = to_dot(cepflow.load(patterns).automaton("C"))
    assert r'where s == \"a\\\\l\\\"b\"' in dot, dot


@pytest.mark.parametrize("source", ["motorbike.vepl", "motorbike.epl"])
def test_graph_draws_window_statements(source: str) -> None:
    res = runner.invoke(app, ["graph", str(EXAMPLES / "motorbike" / source),
                              "AccidentsReport"])
    assert res.exit_code == 0, res.output
    dot = res.output
    assert dot.startswith('digraph "AccidentsReport"')
    assert 'input [label="Accident as a1\\ninput stream"' in dot
    assert "window time_batch(1 d)" in dot
    assert "count(*) as count" in dot and "group by a1.location" in dot
    assert 'output [label="AccidentsReport(timestamp: any, location: any, count: int)' in dot
    assert "input -> window" in dot and "window -> select" in dot and "select -> output" in dot


def test_window_graph_shows_filter_having_and_per_group(tmp_path: Path) -> None:
    patterns = tmp_path / "w.vepl"
    patterns.write_text("atomicEvent R(sensor: String, temp: Double)\n"
                        "complexEvent Hot {\n  from r = R where r.temp > 50 window length(10) "
                        "per group\n  select r.sensor as sensor, avg(r.temp) as mean\n"
                        "  group by r.sensor\n  having avg(r.temp) > 60\n}\n")
    program = cepflow.load(patterns)
    dot = window_to_dot(program.windows[0], program.schemas["Hot"])
    assert "where r.temp > 50" in dot
    assert "window length(10) per group" in dot and "the last 10 events, per group" in dot
    assert "having avg(r.temp) > 60" in dot and "rows on each event" in dot


def test_graph_unknown_name_lists_patterns_and_windows() -> None:
    res = runner.invoke(app, ["graph", str(EXAMPLES / "motorbike" / "motorbike.vepl"), "Nope"])
    assert res.exit_code == 2
    assert "Crash" in res.output and "AccidentsReport" in res.output


def _no_graphviz(monkeypatch: pytest.MonkeyPatch) -> None:
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: None if cmd == "dot"
                        else real(cmd, *a, **k))


@pytest.mark.parametrize("suffix", [".svg", ".png", ".pdf"])
def test_drawing_without_graphviz_is_refused_in_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    _no_graphviz(monkeypatch)
    target = tmp_path / f"x{suffix}"
    res = runner.invoke(app, ["graph", str(EXAMPLES / "gesture" / "gesture.vepl"),
                              "ForwardGesture", "-o", str(target)])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1, res.output
    assert "Graphviz" in lines[0] and "install" in lines[0]
    assert list(tmp_path.iterdir()) == []  # neither x.svg nor a stand-in x.dot


def test_install_hint_names_the_package_manager(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: "/usr/bin/apt-get"
                        if cmd == "apt-get" else None)
    with pytest.raises(RenderError, match=r"apt-get install graphviz"):
        render("digraph {}", Path("/tmp") / "never-written.svg")


def test_unknown_format_refused(tmp_path: Path) -> None:
    with pytest.raises(RenderError, match=r"unknown format '\.jpg'"):
        render("digraph {}", tmp_path / "x.jpg")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz is not installed")
def test_svg_drawn_with_graphviz(tmp_path: Path) -> None:
    target = tmp_path / "x.svg"
    res = runner.invoke(app, ["graph", str(EXAMPLES / "motorbike" / "motorbike.vepl"),
                              "AccidentsReport", "-o", str(target)])
    assert res.exit_code == 0, res.output
    assert "<svg" in target.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["x.svg"]  # no temporary left


def test_graphviz_failure_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    fake = tmp_path / "bin" / "dot"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'Error: syntax error in line 1' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: str(fake) if cmd == "dot"
                        else None)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RenderError, match="Graphviz failed: Error: syntax error in line 1"):
        render("digraph {", out / "x.svg")
    assert list(out.iterdir()) == []
