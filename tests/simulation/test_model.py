"""Simulation model files: the examples load, and every bad model gets a located error naming
its key."""

import contextlib
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.simulation import GenerationError, generate
from cepflow.simulation.simulation_model import (
    SimulationModelError,
    load_model,
    parse_duration,
    parse_model,
)
from cepflow.simulation.tomlkeys import KeyPositions

ROOT = Path(__file__).resolve().parents[2]

GOOD = """\
[simulation]
start = "2017-03-01T00:00:00Z"
duration = "1 d"

[[source]]
kind = "bike"
event = "Motorbike"
instances = 2
arrival = { process = "exponential", mean = "60 s" }

[source.initial]
speed = [100, 62]
seat = true

[source.attributes]
ts_s = { from = "time", unit = "s" }
id = { from = "instance" }
speed = { dist = "normal", sd = 0.5, around = "initial", scale = "initial", type = "int" }
seat = { from = "initial", flip = 0.0001 }
"""


def errors(text: str) -> list[str]:
    with pytest.raises(SimulationModelError) as e:
        parse_model(text, "m.toml")
    return [str(d) for d in e.value.diagnostics]


def test_motorbike_model_follows_the_seed() -> None:
    m = load_model(ROOT / "examples" / "motorbike" / "model.toml")
    (src,) = m.sources
    assert (src.event, src.instances, src.arrival.process, src.arrival.mean_ms) == (
        "Motorbike", 3, "exponential", 60_000)
    assert m.start_ms == 1488326400000 and m.duration_ms == 86_400_000
    speed = src.attributes["speed"]
    assert (speed.dist.kind, speed.dist.params, speed.around, speed.scale, speed.type) == (
        "normal", {"mean": 0.0, "sd": 0.5}, "initial", "initial", "int")
    assert src.attributes["seat"].flip == 0.0001
    assert m.event_types() == {"Motorbike": {
        "timestamp": "int", "motorbikeId": "int", "location": "str", "speed": "int",
        "tire1": "float", "tire2": "float", "seat": "bool"}}


def test_a_good_model() -> None:
    m = parse_model(GOOD, "m.toml")
    assert m.start_ms == 1488326400000
    src = m.sources[0]
    assert src.initial["seat"].values == (True, True)
    assert src.attributes["ts_s"].unit_ms == 1000


@pytest.mark.parametrize(("change", "where", "message"), [
    ('sd = 0.5, around', "18:", "source[0].attributes.speed: the normal distribution needs"),
    ('dist = "normal", sd = 0.5', "18:", "source[0].attributes.speed.dist: unknown distribution"),
    ("sd = 0.5,", "18:", "source[0].attributes.speed.sd: must be a number ≥ 0 (got -1)"),
    ('mean = "60 s"', "9:", "source[0].arrival.mean: '60' is not a duration"),
    ("instances = 2", "8:", "source[0].instances: must be a whole number from 1"),
    ("speed = [100, 62]", "12:", "source[0].initial.speed: has 3 value(s) for 2 instance(s)"),
    ("flip = 0.0001", "19:", "source[0].attributes.seat.flip: must be a number ≤ 1 (got 2)"),
    ('kind = "bike"', "6:", "source[0].kind: must be a name"),
    ('type = "int"', "18:", "source[0].attributes.speed.type: unknown type 'integer'"),
    ('start = "2017-03-01T00:00:00Z"', "2:", "simulation.start: must be within ±2**53 ms"),
])
def test_bad_values_are_located(change: str, where: str, message: str) -> None:
    bad = {
        'sd = 0.5, around': 'around',
        'dist = "normal", sd = 0.5': 'dist = "gauss", sd = 0.5',
        "sd = 0.5,": "sd = -1,",
        'mean = "60 s"': 'mean = "60"',
        "instances = 2": "instances = 0",
        "speed = [100, 62]": "speed = [100, 62, 5]",
        "flip = 0.0001": "flip = 2",
        'kind = "bike"': 'kind = "a bike"',
        'type = "int"': 'type = "integer"',
        'start = "2017-03-01T00:00:00Z"': "start = 1e300",
    }[change]
    text = GOOD.replace(change, bad, 1)
    assert text != GOOD
    found = errors(text)
    assert any(e.startswith(f"m.toml:{where}") and message in e for e in found), found


def test_unknown_keys_name_the_allowed_ones() -> None:
    found = errors(GOOD.replace("seat = { from", "seat = { colour = 1, from"))
    assert found == ["m.toml:19:10: error: source[0].attributes.seat.colour: is not allowed "
                     "with from = \"initial\" (allowed: type, clip, digits, flip)"]
    found = errors(GOOD.replace("[simulation]", "[simulation]\nseed = 3"))
    assert found[0].startswith("m.toml:2:1: error: simulation.seed: unknown key")


def test_every_problem_is_reported_at_once() -> None:
    text = GOOD.replace('sd = 0.5', 'sd = "wide"').replace("flip = 0.0001", 'flip = "x"')
    found = errors(text)
    assert len(found) == 2, found
    assert "speed.sd: must be a finite number, got 'wide'" in found[0]
    assert "seat.flip: must be a finite number, got 'x'" in found[1]


def test_modifiers_must_fit_the_value() -> None:
    found = errors(GOOD.replace("seat = { from = \"initial\", flip = 0.0001 }",
                                "seat = { from = \"instance\", flip = 0.1 }"))
    assert "seat.flip: applies to boolean values only" in found[0]
    found = errors(GOOD.replace('[source.initial]\nspeed = [100, 62]\n', '[source.initial]\n'))
    assert "speed.around: there is no initial value 'speed'" in found[0]
    found = errors(GOOD.replace('ts_s = { from = "time", unit = "s" }',
                                'ts_s = { from = "time", unit = "weeks" }'))
    assert "ts_s.unit: unknown time unit 'weeks'" in found[0]


def test_not_toml_is_located() -> None:
    found = errors(GOOD.replace("instances = 2", "instances = = 2"))
    assert found[0].startswith("m.toml:8:13: error: not valid TOML")


def test_sources_of_one_type_must_agree() -> None:
    second = GOOD[GOOD.index("[[source]]"):].replace('kind = "bike"', 'kind = "other"').replace(
        'id = { from = "instance" }', 'id = { from = "instance", type = "float" }')
    found = errors(GOOD + "\n" + second)
    assert any("source[1].attributes: event 'Motorbike' has attributes" in f for f in found)


def test_choice_probabilities() -> None:
    base = GOOD.replace('seat = { from = "initial", flip = 0.0001 }',
                        'seat = { dist = "choice", values = [true, false], p = [0.7, 0.2] }')
    assert "seat.p: must add up to 1" in errors(base)[0]
    ok = parse_model(base.replace("[0.7, 0.2]", "[0.75, 0.25]"))
    assert ok.sources[0].attributes["seat"].dist.p == (0.75, 0.25)


def test_durations() -> None:
    assert parse_duration("1d") == parse_duration("1 d") == 86_400_000
    assert parse_duration("1.5 h") == 5_400_000
    assert parse_duration("250 ms") == 250
    for bad in ("86400", "1 fortnight", "-1 s", "s"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_key_positions() -> None:
    pos = KeyPositions(GOOD + '\n[[source]]\nkind = "b"\n[source.attributes]\nx = { a = 1 }\n')
    assert pos.find(("simulation", "duration")) == (3, 1)
    assert pos.find(("source", 0, "arrival", "mean")) == (9, 38)
    assert pos.find(("source", 1, "attributes", "x", "a")) == (24, 7)
    assert pos.find(("source", 0, "initial", "speed", 1)) == (12, 1)
    assert pos.find(("nowhere",)) == (1, 1)


_VALUES = st.one_of(
    st.integers(-2**63, 2**63 - 1).map(str),
    st.floats(allow_nan=True).map(lambda f: "nan" if f != f else ("inf" if f == float("inf")
                                  else "-inf" if f == float("-inf") else repr(f))),
    st.text(max_size=8).map(json.dumps),
    st.sampled_from(["true", "false", "[]", "[1, 2]", '["a"]', "{}", '"1 s"', '"0 ms"',
                     '"-1 s"', '"1e9 d"', '"initial"', '"random"', '"normal"', '"time"']))


FUZZ = GOOD + ('w = { dist = "uniform", low = 0, high = 1, digits = 2, clip = [0, 1] }\n'
               'c = { dist = "choice", values = ["a", "b"], p = [0.5, 0.5] }\n')


@settings(max_examples=150, deadline=None)
@given(key=st.sampled_from(["start", "duration", "instances", "mean", "sd", "speed", "flip",
                            "unit", "kind", "process", "type", "seat", "low", "digits", "clip",
                            "values", "p"]), value=_VALUES)
def test_any_value_is_a_located_error_or_a_working_model(key: str, value: str) -> None:
    """Bad input never crashes: every value in every place either makes a model that
    generates (or refuses with GenerationError) or a SimulationModelError naming a key."""
    pattern = {"start": r"(start = )[^\n]*", "duration": r"(duration = )[^\n]*",
               "instances": r"(instances = )\d+", "mean": r'(mean = )"60 s"',
               "sd": r"(sd = )0\.5", "speed": r"(speed = )\[100, 62\]",
               "flip": r"(flip = )0\.0001", "unit": r'(unit = )"s"', "kind": r'(kind = )"bike"',
               "process": r'(process = )"exponential"', "type": r'(type = )"int"',
               "seat": r"(seat = )true", "low": r"(low = )0", "digits": r"(digits = )2",
               "clip": r"(clip = )\[0, 1\]", "values": r'(values = )\["a", "b"\]',
               "p": r"(p = )\[0.5, 0.5\]"}[key]
    text = re.sub(pattern, lambda m: m.group(1) + value, FUZZ, count=1)
    assert text != FUZZ or value in FUZZ
    try:
        model = parse_model(text, "m.toml")
    except SimulationModelError as e:
        assert e.diagnostics and all(d.file == "m.toml" and d.line >= 1 for d in e.diagnostics)
        return
    with contextlib.suppress(GenerationError):
        generate(model, 3_600_000, 1)


def test_a_negative_zero_is_zero() -> None:
    """(Found by the property above: ``sd = -0.0`` passed the check, 'a number ≥ 0', and
    numpy then refused the scale as negative.)"""
    model = parse_model(GOOD.replace("sd = 0.5", "sd = -0.0"), "m.toml")
    generate(model, 3_600_000, 1)
