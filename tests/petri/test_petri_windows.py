"""Window statements as PCPN subnets (004 §III.B.2, §IV): Counter's 31 published values, the
case studies' statements, and the net against the engine on random statements and streams."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.inputs import read_events
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse
from cepflow.loader import load, load_module
from cepflow.petri.crossval import compare, random_program, random_stream
from cepflow.petri.translate import translate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

#: 004 §IV, the final PCPN marking of Counter: (minute, count in the 10-minute slide)
PCPN_COUNTER = [(1, 1), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (8, 1), (9, 3),
                (10, 3), (11, 2), (12, 3), (13, 3), (14, 4), (15, 4), (16, 5), (17, 5), (18, 5),
                (19, 3), (20, 3), (21, 3), (22, 2), (23, 2), (24, 2), (25, 3), (26, 2), (27, 2),
                (28, 2), (29, 3), (30, 3), (31, 4)]


@pytest.mark.parametrize("name", ["contractions.epl", "contractions.vepl"])
def test_contractions_counter_and_duration_reproduce_the_published_markings(name: str) -> None:
    prog = load(EXAMPLES / "contractions" / name)
    events = list(read_events(EXAMPLES / "contractions" / "patients.jsonl", prog.schemas))
    tr = translate(prog, events)
    sim = tr.simulator(seed=5)
    sim.run()
    assert tr.finished(sim)
    out = tr.complex_events(sim)
    # Counter: the net's tokens are Esper's rows (a row per arrival and per expiry); the
    # count in force at each minute is the last row at or before it — 004's 31 values
    rows = [(t / 60_000, p[0]) for _, t, p, _ in out["Counter"]]
    assert [(m, [c for t, c in rows if t <= m][-1]) for m in range(1, 32)] == PCPN_COUNTER
    assert {(t / 60_000, *p) for _, t, p, _ in out["Duration"]} == {
        (14, "Barbara", 5), (16, "Alice", 4), (29, "Alice", 4)}


@pytest.mark.parametrize("close", [False, True])
def test_counter_with_a_batch_window_by_mistake_agrees_with_the_engine(close: bool) -> None:
    text = (EXAMPLES / "contractions" / "contractions.epl").read_text().replace(
        "win:time(10 minutes)", "win:time_batch(10 minutes)")
    prog = load_module(parse_epl(text))
    events = list(read_events(EXAMPLES / "contractions" / "patients.jsonl", prog.schemas))
    c = compare(prog, events, close_windows=close)
    assert c.equal, c.differences
    # 004 §IV: "only 4 events" — three closed batches, a fourth when time runs out (then an
    # empty batch posts count 0, as Esper posts the old batch's remove stream)
    counts = [(t / 60_000, p[0]) for _, t, p, _ in c.net["Counter"]]
    assert counts == ([(11, 3), (21, 3), (31, 3)] if not close
                      else [(11, 3), (21, 3), (31, 3), (41, 1), (51, 0)])


@pytest.mark.parametrize("stream", ["accident.jsonl", "listing1.jsonl"])
def test_the_whole_motorbike_file_agrees_with_the_engine(stream: str) -> None:
    # every pattern, AccidentsReport (time batch, group by, count(*)) and DangerousLocation
    # (per-group length batch) over their output
    prog = load(EXAMPLES / "motorbike" / "motorbike.epl")
    events = list(read_events(EXAMPLES / "motorbike" / stream, prog.schemas))
    c = compare(prog, events, close_windows=True)
    assert c.equal, c.differences
    if stream == "accident.jsonl":
        assert c.net["AccidentsReport"][0][2][1:] == ("Sevilla", 1)


def test_temperature_monitor_agrees_with_the_engine() -> None:
    prog = load(EXAMPLES / "temperature" / "temperature.epl")
    events = list(read_events(EXAMPLES / "temperature" / "events.jsonl", prog.schemas))[:60]
    c = compare(prog, events, close_windows=True)
    assert c.equal, c.differences
    assert len(c.net["Monitor"]) >= 5


def test_sliding_minimum_is_found_again_when_it_leaves() -> None:
    # the minimum leaves the window: the net lowers the group's minimum to what stays
    prog = load_module(parse_epl("create schema R(k int, v int);\n@Name('W')\ninsert into W\n"
                                 "select k, min(v) as lo, max(v) as hi, avg(v) as a\n"
                                 "from R.win:time(2 sec)\ngroup by k;\n"))
    events = [Event("R", (0, v), ts) for ts, v in
              [(0, 1), (500, 5), (1000, 3), (2500, 4), (3000, 2), (4100, 0)]]
    c = compare(prog, events, close_windows=True)
    assert c.equal, c.differences
    assert (3000, (0, 2, 4, 3.0)) in [(t, p) for _, t, p, _ in c.net["W"]]


@pytest.mark.parametrize("window", ["win:time(2 sec)", "win:length(2)",
                                    "win:time_batch(2 sec)", "win:length_batch(2)"])
def test_extremes_are_searched_only_after_they_leave(window: str) -> None:
    # arrivals keep min/max themselves (the engine's running value); a sliding window looks
    # among its records only for a group on W.refind — one whose extreme left — and a batch
    # window never: the search scanned the whole window after every change (quadratic)
    prog = load_module(parse_epl("create schema R(k int, v int);\n@Name('W')\ninsert into W\n"
                                 f"select k, min(v) as lo, max(v) as hi\nfrom R.{window}\n"
                                 "group by k;\n"))
    events = [Event("R", (k, v), ts) for ts, k, v in
              [(0, 0, 1), (500, 1, 5), (1000, 0, 3), (1600, 0, 0), (2500, 1, 4), (3000, 0, 2)]]
    tr = translate(prog, events)
    searches = [t for t in tr.net.transitions if t in ("W.min0", "W.max0")]
    if "batch" in window:
        assert searches == [] and "W.refind" not in tr.net.places
    else:
        assert searches == ["W.min0", "W.max0"]
        reads = {(a.place, a.transition) for a in tr.net.arcs if a.kind == "read"}
        assert {("W.refind", "W.min0"), ("W.refind", "W.max0")} <= reads
    sim = tr.simulator(choice="first", record=True)
    sim.run()
    fired = [s.transition for s in sim.trace]
    assert fired.count("W.min0") + fired.count("W.max0") <= (0 if "batch" in window else 4)
    c = compare(prog, events, close_windows=True)
    assert c.equal, c.differences


@pytest.mark.parametrize("window", ["win:time_batch(10 msec)", "win:length_batch(2)",
                                    "win:time(10 msec)", "std:groupwin(g).win:length(2)"])
def test_fields_named_like_a_records_components_keep_their_values(window: str) -> None:
    # a record is (q, gq, t, n, g, a0…, fields…) and a closing batch (cid, g, …): an event
    # field named g, q, t, n, a0 or cid was the same net variable as the component, so no
    # binding matched and the statement output nothing (fields are now r.e.<name>)
    prog = load_module(parse_epl(
        "create schema R(g string, q int, t int, n int, a0 int, cid int);\n"
        "@Name('W')\ninsert into W\nselect g, q, cid, count(*) as c, sum(a0) as s, "
        f"max(t) as hi\nfrom R.{window}\ngroup by g;\n"))
    events = [Event("R", (g, k, 10 * k, -k, k % 3, 7), ts) for k, (ts, g) in enumerate(
        [(0, "a"), (0, "b"), (3, "a"), (10, "a"), (12, "b"), (15, "a"), (21, "b"), (30, "a")])]
    for close in (False, True):
        c = compare(prog, events, seed=2, close_windows=close)
        assert c.equal, c.differences
        assert c.net["W"]


UNION_VEPL = """atomicEvent R(s: String, v: Double)
complexEvent Low(s: any, g: any) { as every r = R where r.v < 5 context esper
  select r.s as s, 1 as g }
complexEvent High(s: any, g: any) { as every r = R where r.v >= 5 context esper
  select r.s as s, 2 as g }
complexEvent Level { from x = Low | High where x.g > 0 window WINDOW
  select x.s as s, max(x.g) as g, min(x.g) as lo, count(*) as n group by x.s }
"""


@pytest.mark.parametrize("window", ["time_batch(10)", "length(3)", "time(10)"])
def test_a_statement_over_a_union_reads_every_type_of_it(window: str) -> None:
    # from x = Low | High: each type's inbox is copied once into the statement's W.in; the
    # net read only the first type of the union before
    prog = load_module(parse(UNION_VEPL.replace("WINDOW", window)))
    events = [Event("R", (s, v), ts) for ts, s, v in
              [(0, "a", 1.0), (0, "a", 7.0), (3, "b", 2.0), (10, "a", 1.0), (12, "b", 9.0),
               (15, "a", 6.0), (21, "b", 0.5), (30, "a", 3.0)]]
    tr = translate(prog, events)
    assert {"Level.Low", "Level.High", "Level.in", "Level.join.Low",
            "Level.join.High"} <= set(tr.net.places) | set(tr.net.transitions)
    for close in (False, True):
        c = compare(prog, events, seed=3, close_windows=close)
        assert c.equal, c.differences
        assert any(p[3] == 2 for _, _, p, _ in c.net["Level"])  # rows count both types


def test_the_air_quality_set_agrees_with_the_engine() -> None:
    # 003 §V.F.2's 43 statements (six aggregates, 36 grade patterns, AirQualityLevel over the
    # union of the grades) on readings drawn from the example's model, both syntaxes
    from cepflow.simulation import generate, load_model

    model = load_model(EXAMPLES / "air_quality" / "model.toml")
    for name in ("air_quality.epl", "air_quality.vepl"):
        prog = load(EXAMPLES / "air_quality" / name)
        events = generate(model, None, 11, limit=500).events(prog.schemas)
        c = compare(prog, events, seed=1, close_windows=True)
        assert c.equal, c.differences
        assert c.net["AirQualityLevel"] and c.net["COGood"]


EXAMPLES_N = int(os.environ.get("CEPFLOW_PETRI_EXAMPLES", "40"))


@st.composite
def cases(draw):
    def pick(options):
        return draw(st.sampled_from(list(options)))

    text = random_program(pick, windows=True)
    events = random_stream(pick, draw(st.integers(0, 16)))
    return text, events, draw(st.integers(0, 2**16)), draw(st.booleans())


@settings(max_examples=EXAMPLES_N, deadline=None,
          derandomize=os.environ.get("CEPFLOW_PETRI_RANDOM", "") == "",
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
def test_window_statements_output_the_engines_rows(case) -> None:
    text, events, seed, close = case
    prog = load_module(parse_epl(text))
    c = compare(prog, events, seed=seed, close_windows=close)
    assert c.equal, "\n".join([text, repr(events), *c.differences])
