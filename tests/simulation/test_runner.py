"""Runs: each run generates its events and runs the patterns; local processes give the same
counts as one process; time passes to the end of the run; models are checked against the
patterns with located errors."""

from pathlib import Path

import pytest

from cepflow.language.epl import parse_epl
from cepflow.loader import diagnose_paths, load, load_module
from cepflow.simulation import (
    Simulation,
    SimulationModelError,
    generate,
    load_model,
    parse_model,
    run_local,
)
from cepflow.simulation.monte_carlo import LocalRunner

ROOT = Path(__file__).resolve().parents[2]
MOTORBIKE = ROOT / "examples" / "motorbike"
TEMPERATURE = ROOT / "examples" / "temperature"
HOUR = 3_600_000

TICKS = """
create schema Tick(n int);
@Name('Late')
insert into Late select a.n as n
from pattern [every a = Tick -> timer:interval(30 sec)];
@Name('Big')
insert into Big select a.n as n from pattern [every a = Tick(a.n = 3)];
"""

TICK_MODEL = """
[[source]]
kind = "clock"
event = "Tick"
instances = 3
arrival = { process = "periodic", period = "1 min" }
[source.attributes]
n = { from = "instance" }
"""


def epl(text: str):
    return load_module(parse_epl(text))


def motorbike_set() -> Simulation:
    _, program = diagnose_paths([MOTORBIKE / "motorbike.epl", MOTORBIKE / "properties.epl"])
    assert program is not None
    return Simulation(program, load_model(MOTORBIKE / "model.toml"), 2 * HOUR, 11)


def test_a_run_counts_every_event_type() -> None:
    sim = motorbike_set()
    assert sim.simple == ["Motorbike"]
    assert sim.complex == ["GhostRider", "BlowOutTire", "DriverLeftSeat", "Crash", "Accident",
                           "TwoAccidentsTheSameDay", "TooHighTirePressure", "AccidentsReport",
                           "DangerousLocation"]
    r = sim.run(4)
    events = generate(sim.model, 2 * HOUR, 11, 4)
    assert r.counts["Motorbike"] == len(events) and r.digest == events.digest()
    # TooHighTirePressure by hand: readings with a tire at 4.0 BAR or more
    tires = events.sources[0].columns
    assert r.counts["TooHighTirePressure"] == int(((tires["tire1"] >= 4.0) |
                                                    (tires["tire2"] >= 4.0)).sum()) > 0
    assert list(r.counts) == sim.event_types
    assert r.seconds >= r.generate_seconds + r.detect_seconds - 1e-9
    assert sim.run(4) .counts == r.counts


def test_processes_give_the_counts_of_one_process() -> None:
    sim = motorbike_set()
    alone = run_local(sim, range(6), workers=1)
    spread = run_local(sim, range(6), workers=2)
    assert [r.run for r in spread] == list(range(6))
    assert [(r.counts, r.digest) for r in spread] == [(r.counts, r.digest) for r in alone]
    assert len({r.digest for r in spread}) == 6
    with LocalRunner(sim, 2) as pool:
        assert pool.workers == 2 and pool.where == "2 processes"
        assert sorted(r.run for r in pool.map([9, 3])) == [3, 9]


@pytest.mark.parametrize(("duration_s", "late"), [(600, 30), (590, 30), (560, 27)])
def test_time_passes_to_the_end_of_the_run(duration_s: int, late: int) -> None:
    """Ticks at 0, 60, …, 540 s (three instances); each fires Late 30 s later — when that is
    within the run."""
    sim = Simulation(epl(TICKS), parse_model(TICK_MODEL), duration_s * 1000, 1)
    counts = sim.run(0).counts
    assert counts["Tick"] == 30 and counts["Big"] == 10
    assert counts["Late"] == late


def test_models_are_checked_against_the_patterns() -> None:
    program = epl(TICKS)
    bad = TICK_MODEL.replace('n = { from = "instance" }',
                             'n = { from = "instance", type = "float" }\nm = { from = "instance" }')
    with pytest.raises(SimulationModelError) as e:
        Simulation(program, parse_model(bad, "m.toml"), 1000, 1)
    assert [str(d) for d in e.value.diagnostics] == [
        "m.toml:8:1: error: source[0].attributes.n: float values, but Tick.n is Integer",
        "m.toml:9:1: error: source[0].attributes.m: Tick has no parameter 'm' (it has: n)"]
    with pytest.raises(SimulationModelError,
                       match=r"m.toml:4:1: error: source\[0\].event: event type "
                             r"'Late' is a complex event"):
        Simulation(program, parse_model(TICK_MODEL.replace('"Tick"', '"Late"'), "m.toml"),
                   1000, 1)
    missing = TICK_MODEL.replace('n = { from = "instance" }', 'x = { from = "instance" }')
    with pytest.raises(SimulationModelError, match="no value for 'n', a parameter of Tick"):
        Simulation(program, parse_model(missing), 1000, 1)


def test_ints_become_floats_for_float_parameters() -> None:
    program = epl("create schema R(v double);\n@Name('Hi') insert into Hi select r.v as v "
                  "from pattern [every r = R(r.v > 1)];")
    model = parse_model(TICK_MODEL.replace('"Tick"', '"R"').replace("n = {", "v = {"))
    events = generate(model, 120_000, 1).events(program.schemas)
    assert {type(e.params[0]) for e in events} == {float}
    assert Simulation(program, model, 120_000, 1).run(0).counts["Hi"] == 4


def test_temperature_alerts_get_their_events() -> None:
    program = load(TEMPERATURE / "alerts.epl")
    sim = Simulation(program, load_model(TEMPERATURE / "model.toml"), HOUR, 5)
    counts = [sim.run(r).counts for r in range(3)]
    assert all(c["TemperatureEvent"] == 3600 for c in counts)
    assert sum(c["Critical"] for c in counts) > 0


def test_counts_per_value_of_parameters() -> None:
    sim = Simulation(epl(TICKS), parse_model(TICK_MODEL), 600_000, 1,
                     count_by=(("Tick", ("n",)), ("Late", ("n",))))
    counts = sim.run(0).counts
    assert {k: v for k, v in counts.items() if "[" in k} == {
        "Late[n=1]": 10, "Late[n=2]": 10, "Late[n=3]": 10,
        "Tick[n=1]": 10, "Tick[n=2]": 10, "Tick[n=3]": 10}
    temperature = Simulation(load(TEMPERATURE / "alerts.vepl"),
                             load_model(TEMPERATURE / "model.toml"), HOUR, 5,
                             count_by=(("Critical", ("temp1",)),))
    run = temperature.run(1).counts
    assert sum(v for k, v in run.items() if k.startswith("Critical[")) == run["Critical"] > 0
    with pytest.raises(ValueError, match="Tick has no parameter 'm'"):
        Simulation(epl(TICKS), parse_model(TICK_MODEL), 1000, 1, count_by=(("Tick", ("m",)),))
    with pytest.raises(ValueError, match="'Nope' is not an event type"):
        Simulation(epl(TICKS), parse_model(TICK_MODEL), 1000, 1, count_by=(("Nope", ("n",)),))


def test_failed_expressions_are_counted_and_the_run_goes_on() -> None:
    program = load("atomicEvent Tick(n : Integer)\n"
                   "complexEvent Root(n : any) {\n"
                   "    as every a = Tick where sqrt(a.n - 2) >= 0\n"
                   "    context esper\n"
                   "    select a.n as n\n}\n")
    result = Simulation(program, parse_model(TICK_MODEL), 600_000, 1).run(0)
    # n = 1: sqrt(-1) fails on each of its 10 ticks (false, one record each); n = 2, 3 match
    assert result.rejected == 10 and result.counts["Root"] == 20
