"""Window statements in EPL and in cepflow syntax, run by the engine with the patterns.

The case studies' window statements with their published facts — 003 Listings 3-4
(AccidentsReport, DangerousLocation) on a generated motorbike stream whose expected output is
computed from the generator's scenarios alone, 003 §V.F.1 Monitor, 004 §IV Counter (the
published PCPN marking) — each in both syntaxes; the engine's order of outputs; located errors.
(Saved state: tests/windows/test_window_state.py; Spark: tests/spark/test_spark_windows.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cepflow.events.event import Event, SideChannel
from cepflow.inputs import read_events
from cepflow.language import ast
from cepflow.language.diagnostics import PatternSyntaxError
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse, parse_file
from cepflow.language.printer import format_module
from cepflow.loader import load, load_module, parse_path
from cepflow.runtime.engine import Engine
from cepflow.windows import run_statements
from support import load_script

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MINUTE = 60_000


def run_program(program, events, close_windows: bool = False):
    engine = Engine(program)
    out = [m for e in events for m in engine.process(e)]
    return out + engine.finish(close_windows=close_windows)


def run_file(patterns: Path, events: Path, close_windows: bool = False):
    program = load(patterns)
    evs = list(read_events(events, program.schemas, SideChannel()))
    return run_program(program, evs, close_windows)


def windows_of(module: ast.Module) -> list[ast.WindowDecl]:
    return [d for d in module.decls if isinstance(d, ast.WindowDecl)]


# -- both syntaxes, one AST -------------------------------------------------------------------
@pytest.mark.parametrize("example", ["motorbike/motorbike", "contractions/contractions",
                                     "temperature/temperature"])
def test_epl_and_cepflow_syntax_give_the_same_window_declarations(example: str) -> None:
    epl = parse_path(EXAMPLES / f"{example}.epl")
    vepl = parse_file(EXAMPLES / f"{example}.vepl")
    assert windows_of(epl) and windows_of(epl) == windows_of(vepl)
    # and the printer writes them back as cepflow syntax that reads to the same AST
    assert windows_of(parse(format_module(epl))) == windows_of(epl)


def test_motorbike_files_are_the_same_module() -> None:
    epl = parse_path(EXAMPLES / "motorbike" / "motorbike.epl")
    assert epl.decls == parse_file(EXAMPLES / "motorbike" / "motorbike.vepl").decls


def test_window_statement_syntax_round_trips() -> None:
    text = """atomicEvent T(sensor: String, value: Double)
complexEvent M {
    from t = T where t.value > 0 and t.sensor != "x" window length(5) per group
    select sensor, avg(value) as a, count(*), current_timestamp() as at
    group by t.sensor having avg(t.value) > 3 and count() > 1
}
complexEvent N { from M window time(1500 ms) select max(a) as top }
"""
    module = parse(text)
    m = module.decls[1]
    assert isinstance(m, ast.WindowDecl)
    assert m.window == ast.DataWindow("length", 5, True)
    assert m.select[2] == (None, ast.Call("count", ()))
    assert m.select[3] == ("at", ast.Name("@ts"))  # current_timestamp(), as in patterns
    assert module.decls[2].window == ast.DataWindow("time", 1500)
    assert parse(format_module(module)) == module
    program = load_module(module)
    assert program.schemas["M"].param_names == ("sensor", "a", "count(*)", "at")
    assert [w.name for w in program.windows] == ["M", "N"]


# -- 003 motorbike: Listings 3 and 4 on a generated stream --------------------------------------
def _generator():
    return load_script(EXAMPLES / "motorbike" / "generate.py", "motorbike_generate")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory):
    gen = _generator()
    stream, info = gen.generate(events=9_000, bikes=120, days=3.5, accidents=10, crashes=330,
                                seed=1, locations=3)
    path = tmp_path_factory.mktemp("motorbike") / "stream.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in stream), encoding="utf-8")
    return path, gen.expected(info)


@pytest.mark.parametrize("name", ["motorbike.epl", "motorbike.vepl"])
def test_motorbike_generated_stream_gives_the_placed_accidents_and_crashes(generated, name):
    path, exp = generated
    out = run_file(EXAMPLES / "motorbike" / name, path)
    by_type: dict[str, list] = {}
    for m in out:
        by_type.setdefault(m.type, []).append(m)
    assert len(by_type["Crash"]) == exp["crashes"]
    assert [(m.ts, m.bindings_for_output()["location"]) for m in by_type["Accident"]] \
        == [tuple(a) for a in exp["accidents"]]
    report = [(m.ts, m.bindings_for_output()["location"], m.bindings_for_output()["count"])
              for m in by_type.get("AccidentsReport", [])]
    assert sorted(report) == sorted(tuple(r) for r in exp["report"])
    assert len(report) >= 4 and any(c == 0 for _, _, c in report)  # a day without accidents
    assert all(m.bindings_for_output()["timestamp"] == m.ts for m in by_type["AccidentsReport"])
    dangerous = [(m.ts, m.bindings_for_output()["location"])
                 for m in by_type.get("DangerousLocation", [])]
    assert dangerous == [tuple(d) for d in exp["dangerous"]] and len(dangerous) >= 2
    # nothing else fires on the generated normal readings
    assert set(by_type) == {"BlowOutTire", "Crash", "DriverLeftSeat", "Accident",
                            "AccidentsReport", "DangerousLocation"}


def test_accidents_report_row_follows_the_accident_it_counts() -> None:
    # higher order: Accident (a pattern over patterns) feeds the daily window; the row comes
    # when the day is over, after the patterns' events of the instant that closes it
    program = load(EXAMPLES / "motorbike" / "motorbike.epl")
    evs = list(read_events(EXAMPLES / "motorbike" / "accident.jsonl", program.schemas,
                           SideChannel()))
    day_later = Event("Motorbike", (0, 9, "Cadiz", 10, 2.5, 2.5, True),
                      evs[-1].ts + 86_400_000)
    out = run_program(program, [*evs, day_later])
    assert [m.type for m in out] == ["BlowOutTire", "Crash", "Crash", "DriverLeftSeat",
                                     "Accident", "AccidentsReport"]
    accident, report = out[-2], out[-1]
    assert report.ts == accident.ts + 86_400_000
    assert report.bindings_for_output() == {"timestamp": report.ts, "location": "Sevilla",
                                            "count": 1}


def test_listing_4_as_written_counts_cadiz_only() -> None:
    text = """create schema Crash(timestamp long, motorbikeId int, location string);
@Name('DangerousLocation')
insert into DangerousLocation
select current_timestamp() as timestamp,
       a1.location as location
from pattern [every a1 = Crash(a1.location="Cadiz")]
            .win:length_batch(100)
group by a1.location"""
    program = load_module(parse_epl(text))
    places = (["Cadiz", "Malaga", "Cadiz"] * 150)
    evs = [Event("Crash", (i, i, p), 1000 * i) for i, p in enumerate(places)]
    cadiz = [e.ts for e in evs if e.params[2] == "Cadiz"]
    out = run_program(program, evs)
    assert [(m.ts, m.params[1]) for m in out] == [(cadiz[99], "Cadiz"), (cadiz[199], "Cadiz"),
                                                  (cadiz[299], "Cadiz")]


# -- 003 §V.F.1 temperature: Monitor -----------------------------------------------------------
@pytest.mark.parametrize("name", ["temperature.epl", "temperature.vepl"])
def test_monitor_averages_every_10_seconds(name: str) -> None:
    path = EXAMPLES / "temperature" / "events.jsonl"
    readings = [json.loads(line) for line in path.read_text().splitlines()]
    t0 = readings[0]["ts"]
    batches: dict[int, list[int]] = {}
    for r in readings:
        batches.setdefault((r["ts"] - t0) // 10_000, []).append(r["temperature"])
    last = max(batches)  # still open at the end of input: Esper does not post it
    expected = [(t0 + 10_000 * (k + 1), sum(v) / len(v)) for k, v in sorted(batches.items())
                if k < last]
    out = run_file(EXAMPLES / "temperature" / name, path)
    assert [m.ts for m in out] == [t for t, _ in expected]
    assert [m.bindings_for_output()["avgTemp"] for m in out] \
        == pytest.approx([a for _, a in expected])
    assert len(out) == 6
    # --close-windows: time runs out, the last batch closes, then one empty batch posts null
    closed = run_file(EXAMPLES / "temperature" / name, path, close_windows=True)
    assert [m.params[0] for m in closed[6:]] == [pytest.approx(sum(batches[last]) / 10), None]


# -- 004 §IV contractions: Counter -------------------------------------------------------------
#: the final PCPN marking of Counter: (minute, count in the 10-minute slide)
PCPN_COUNTER = [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1), (9, 3),
                (10, 3), (11, 2), (12, 3), (13, 3), (14, 4), (15, 4), (16, 5), (17, 5), (18, 5),
                (19, 3), (20, 3), (21, 3), (22, 2), (23, 2), (24, 2), (25, 3), (26, 2), (27, 2),
                (28, 2), (29, 3), (30, 3), (31, 4)]


@pytest.mark.parametrize("name", ["contractions.epl", "contractions.vepl"])
def test_counter_gives_the_published_marking(name: str) -> None:
    out = run_file(EXAMPLES / "contractions" / name, EXAMPLES / "contractions" / "patients.jsonl")
    counter = [(m.ts / MINUTE, m.params[0]) for m in out if m.type == "Counter"]
    # Esper's rows: one per accepted contraction and one per expiry instant (10 min later)
    assert counter == [(1, 1), (9, 2), (9, 3), (11, 2), (12, 3), (14, 4), (16, 5), (19, 3),
                       (22, 2), (24, 1), (24, 2), (25, 3), (26, 2), (29, 3), (31, 4)]
    # the marking counts at every minute tick: the count in force is the last row at or
    # before the minute — all 31 published values
    marking = [(m, [c for t, c in counter if t <= m][-1]) for m in range(1, 32)]
    assert marking == PCPN_COUNTER
    # Duration runs in the same engine and keeps its published output
    duration = [(m.ts / MINUTE, *m.params) for m in out if m.type == "Duration"]
    assert duration == [(14, "Barbara", 5), (16, "Alice", 4), (29, "Alice", 4)]
    # at minute 24 the expiry row (24, 1) comes before Barbara's arrival (24, 2), and both
    # before nothing else: Duration fires at 16 and 29 only
    rows_24 = [m for m in out if m.ts == 24 * MINUTE]
    assert [m.params for m in rows_24] == [(1,), (2,)] and not rows_24[0].parts


# -- one engine: order, higher order, rules -----------------------------------------------------
ORDER = """atomicEvent R(k: String, v: Integer)
complexEvent Pair { as every a = R where a.v > 0 -> b = R where b.k == a.k
                    select a.k as k, b.v as v }
complexEvent Sum { from R window length(2) select sum(v) as s }
complexEvent High { as every h = Sum where h.s > 10 select h.s as s }
complexEvent Last { from Pair window time(5 s) select count(*) as n }
rule alarm on High action alarm
"""


def test_patterns_before_statements_and_rows_re_enter() -> None:
    program = load_module(parse(ORDER))
    fired = []
    engine = Engine(program, actions={"alarm": lambda act: fired.append(act.event.params)})
    out = []
    for i, (k, v) in enumerate([("x", 1), ("x", 20), ("y", 3)]):
        out += [(m.type, m.params) for m in engine.process(Event("R", (k, v), 1000 * i))]
    out += [(m.type, m.params) for m in engine.finish(close_windows=True)]
    assert out == [
        ("Sum", (1,)),
        # at R(x, 20): the pattern's match and what it causes first, then the statement's row
        ("Pair", ("x", 20)), ("Last", (1,)), ("Sum", (21,)), ("High", (21,)),
        ("Sum", (23,)), ("High", (23,)),
        ("Last", (0,)),  # close_windows: the Pair leaves the 5-second window at 6 s
    ]
    assert fired == [(21,), (23,)]
    assert engine.stats.by_pattern["Sum"] == 3


def test_statements_only_program_equals_run_statements() -> None:
    text = """atomicEvent R(k: String, v: Integer)
complexEvent A { from R where v >= 0 window time_batch(3 s) select k, sum(v) as s group by k }
complexEvent B { from A window length(2) select max(s) as top, count(*) as n }
"""
    program = load_module(parse(text))
    evs = [Event("R", ("ab"[i % 2], i % 7 - 1), 700 * i) for i in range(40)]
    engine_rows = [(m.type, m.ts, m.params) for m in run_program(program, evs)]
    runtime_rows = [(m.type, m.ts, m.params)
                    for m in run_statements(program.windows, evs, program.schemas)]
    assert engine_rows == runtime_rows and len(engine_rows) > 20


# -- errors are located -------------------------------------------------------------------------
EPL_SCHEMA = "create schema R(k string, v double);\n"


@pytest.mark.parametrize(("text", "line", "col", "what"), [
    ("insert into X select avg(v) as a from R.win:ext_timed(v, 10 sec)", 2, 40,
     "view 'win:ext_timed' is not supported"),
    ("insert into X select avg(v) as a from R", 2, 39, "without a data window"),
    ("insert into X select avg(v) as a from R.win:time(1 sec) where v > 1", 2, 57,
     "'where' after the stream"),
    ("insert into X select * from R.win:length(3)", 2, 15, "select *"),
    ("select avg(v) from R.win:length(3)", 2, 1, "needs @Name"),
    ("insert into X select count(*) as n from pattern [every a = R -> b = R].win:time(1 sec)",
     2, 41, "every a = Type(filter)"),
    ("insert into X select a.k as k from pattern [every a = R] group by a.k", 2, 58,
     "needs a data window"),
    ("insert into X select avg(v) as a from R.win:length(0)", 2, 40, "positive whole number"),
    ("insert into X select avg(v) as a from R.win:time_batch(1 sec, 0)", 2, 40,
     "reference point"),
    ("insert into X select avg(v) as a from R.std:groupwin(k).win:time(1 sec) group by k",
     2, 40, "before win:length"),
    ("insert into X select avg(v) as a from R.win:time(1 sec).win:length(3)", 2, 56,
     "exactly one data window"),
])
def test_unsupported_epl_windows_are_reported_with_their_location(text, line, col, what):
    with pytest.raises(PatternSyntaxError) as info:
        load_module(parse_epl(EPL_SCHEMA + text, "x.epl"))
    d = info.value.diagnostics[0]
    assert what in d.message
    assert (d.file, d.line, d.col) == ("x.epl", line, col)


@pytest.mark.parametrize(("body", "line", "col", "what"), [
    ("from a = R window time(1 s) select a.kk", 3, 53, "unknown name 'a.kk'"),
    ("from R window time(1 s) select avg(k)", 3, 49, "avg() needs numbers"),
    ("from R where v + 1 window time(1 s) select v", 3, 31, "must be a condition"),
    ("from R window time(1 s) select v having sum(v)", 3, 58, "must be a condition"),
    ("from R window time(1 s) select v group by nope", 3, 60, "unknown name 'nope'"),
    ("from R window sliding(1 s) select v", 3, 32, "unknown data window 'sliding'"),
    ("from R window length(2.5) select v", 3, 39, "positive whole number"),
    ("from R window time(1 s) select sum(avg(v))", 3, 49, "cannot be nested"),
    ("from R window time(1 s) select v as x, k as x", 3, 14, "used twice"),
    ("from Nope window time(1 s) select v", 3, 23, "undeclared event pattern 'Nope'"),
])
def test_cepflow_window_errors_are_located(body, line, col, what) -> None:
    text = f"atomicEvent R(k: String, v: Double)\n\ncomplexEvent X {{ {body} }}\n"
    from cepflow.loader import diagnose

    try:
        diags, program = diagnose(parse(text, "x.vepl"))
    except PatternSyntaxError as e:
        diags, program = e.diagnostics, None
    assert program is None
    d = next(d for d in diags if d.severity == "error")
    assert what in d.message, d
    assert (d.file, d.line) == ("x.vepl", line)
    assert d.col == col, d


def test_a_cycle_through_a_window_statement_is_reported() -> None:
    text = """atomicEvent R(v: Integer)
complexEvent A { from B window length(2) select count(*) as n }
complexEvent B { as every b = A select b.n as n }
"""
    with pytest.raises(PatternSyntaxError) as info:
        load_module(parse(text, "c.vepl"))
    assert "cycle" in str(info.value)


def test_cli_runs_window_statements(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cepflow.cli.main import app

    runner = CliRunner()
    epl = EXAMPLES / "temperature" / "temperature.epl"
    res = runner.invoke(app, ["check", str(epl)])
    assert res.exit_code == 0 and "1 window statement(s)" in res.output
    out = tmp_path / "m.jsonl"
    res = runner.invoke(app, ["run", str(epl), "-i", str(EXAMPLES / "temperature" /
                                                         "events.jsonl"),
                              "-o", str(out), "--no-progress"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["pattern"] for r in rows] == ["Monitor"] * 6
    assert rows[0] == {"pattern": "Monitor", "ts": 1500000010000, "params": {"avgTemp": 74.1},
                       "events": []}


def test_window_statements_call_the_functions_the_module_was_loaded_with() -> None:
    from cepflow.loader import load
    from cepflow.runtime.engine import Engine

    program = load("atomicEvent R(k: String, v: Integer)\n"
                   "complexEvent M { from R window length(2) select twice(v) as d }",
                   functions={"twice": lambda x: 2 * x})
    engine = Engine(program)
    rows = [ce for i, v in enumerate((3, 5)) for ce in engine.process(Event("R", ("a", v), i))]
    assert [ce.params for ce in rows] == [(6,), (10,)]
