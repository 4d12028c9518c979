"""The target's cone (analysis/cone.py): the cone's program, run alone on any input, emits the
target events the whole program does, at the same steps — what lets the bounded search run
only the cone on its last level."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cepflow
from cepflow.analysis import read
from cepflow.analysis.cone import cone_program
from cepflow.analysis.domain import load_domain
from cepflow.events.event import Event
from cepflow.runtime.engine import Engine

ROOT = Path(__file__).resolve().parents[2]
MOTORBIKE = ROOT / "examples" / "motorbike"
WINDOWS = """atomicEvent R(k: Integer, v: Integer)
complexEvent S1 { from r = R window time(3) select r.k as k, avg(r.v) as a group by r.k }
complexEvent S3 { from r = R window length_batch(2) select count(*) as n }
complexEvent P(k: Integer) { as (S1(k, _) -> R(k, _))[6] }
complexEvent Q { as S3 -> S3 }
complexEvent U(k: Integer) { as P(k) -> R(k, _) }
"""


def _programs() -> dict[str, object]:
    out = {"motorbike": read([MOTORBIKE / "motorbike.epl",
                              MOTORBIKE / "properties.epl"]).program,
           "windows": cepflow.load(WINDOWS)}
    for name, path in (("alerts", "temperature/alerts.epl"),
                       ("temperature", "temperature/temperature.vepl"),
                       ("contractions", "contractions/contractions.epl"),
                       ("every", "every/every.epl")):
        out[name] = cepflow.load(ROOT / "examples" / path)
    return out


PROGRAMS = _programs()


def _engine(program) -> Engine:
    return Engine(program, actions={}, strict_actions=False)


def _emitted(program, events: list[Event], target: str) -> list[tuple]:
    """(step, params, ts) of every ``target`` event, per input event."""
    eng = _engine(program)
    return [(i, c.params, c.ts) for i, e in enumerate(events)
            for c in eng.process(Event(e.type, e.params, e.ts)) if c.type == target]


def test_the_motorbike_cones() -> None:
    program = PROGRAMS["motorbike"]
    names = {t: None if (c := cone_program(program, t, _engine(program))) is None else
             sorted(a.name for a in c.automata) + sorted(w.name for w in c.windows)
             for t in ("TooHighTirePressure", "Accident", "AccidentsReport")}
    assert names == {"TooHighTirePressure": ["TooHighTirePressure"],
                     "Accident": ["Accident", "BlowOutTire", "Crash", "DriverLeftSeat"],
                     "AccidentsReport": ["Accident", "BlowOutTire", "Crash", "DriverLeftSeat",
                                         "AccidentsReport"]}


def test_no_cone_when_everything_feeds_the_target_or_an_action_may_emit() -> None:
    chain = cepflow.load("""atomicEvent A(x: Integer)
complexEvent P(x: Integer) { as A(x) -> A(x) }
complexEvent T(x: Integer) { as P(x) -> A(x) }
complexEvent O(x: Integer) { as A(x) }
rule r on O action act""")
    assert [a.name for a in cone_program(chain, "T", _engine(chain)).automata] == ["P", "T"]
    assert cone_program(chain, "O", _engine(chain)).automata[0].name == "O"
    acting = Engine(chain, actions={"act": lambda _: None})
    assert cone_program(chain, "T", acting) is None  # (the action could emit anything)
    alone = cepflow.load("atomicEvent A(x: Integer)\ncomplexEvent T(x: Integer) { as A(x) }")
    assert cone_program(alone, "T", _engine(alone)) is None


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(PROGRAMS)), seed=st.integers(0, 10_000),
       n=st.integers(1, 30))
def test_the_cone_emits_what_the_whole_program_does(name: str, seed: int, n: int) -> None:
    program = PROGRAMS[name]
    rng = random.Random(seed)
    # (the motorbike search's domain reaches every pattern of the set within a few events)
    candidates = load_domain(MOTORBIKE / "search.toml" if name == "motorbike" else None,
                             program).events
    ts, events = 0, []
    for _ in range(n):
        ts += rng.choice([0, 0, 0, 1, 2, 5, 1000, 3001, 86_400_001])
        events.append(Event(*rng.choice(candidates), ts))
    full = _engine(program)
    produced = [a.name for a in program.automata] + [w.name for w in program.windows]
    for target in produced:
        cone = cone_program(program, target, full)
        if cone is None:
            continue
        assert _emitted(cone, events, target) == _emitted(program, events, target), target


@pytest.mark.parametrize("target", ["TooHighTirePressure", "Accident"])
def test_the_last_level_is_the_cones(target: str) -> None:
    """The search's last level runs the cone (bounded_search._Expander.children): what it
    yields are the cone's engines, and they emit what the whole program's do."""
    from cepflow.analysis.bounded_search import _Expander

    program = PROGRAMS["motorbike"]
    dom = load_domain(MOTORBIKE / "search.toml", program)
    exp = _Expander(program, target, dom, None, "fork")
    path = [Event(*dom.events[i], t) for i, t in ((5, 0), (1, 0), (4, 1000))]
    whole = list(exp.children(None, 1000, lambda: path))
    cone = list(exp.children(None, 1000, lambda: path, last_level=True))
    assert [(m, ei, ts, hit) for m, ei, ts, _, hit in cone] == [
        (m, ei, ts, hit) for m, ei, ts, _, hit in whole]
    assert {len(eng.matchers) for *_, eng, _ in cone} == {
        len(cone_program(program, target, exp.node0).automata)}


def test_the_cone_finds_the_accident() -> None:
    """The witness the search pins (test_search.MOTORBIKE_PINS): Accident at its 4th event,
    with the whole program and with the cone."""
    program = PROGRAMS["motorbike"]
    events = [Event("Motorbike", (0, 1, "Cadiz", speed, tire1, 3.0, seat), 0)
              for speed, tire1, seat in ((60, 3.0, True), (60, 1.0, True), (0, 1.0, True),
                                         (0, 1.0, False))]
    cone = cone_program(program, "Accident", _engine(program))
    assert [i for i, *_ in _emitted(cone, events, "Accident")] == [3]
    assert _emitted(cone, events, "Accident") == _emitted(program, events, "Accident")
