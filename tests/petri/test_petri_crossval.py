"""Cross-validation property (issue 19.5): on random Esper pattern sets and random streams the
net's complex-event places hold exactly the engine's complex events — numbers, times, values
and the events that made them. A modest number of examples here; scripts/petri_crossval.py
runs thousands."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepflow.language.epl import parse_epl
from cepflow.loader import load, load_module
from cepflow.petri.crossval import compare, random_program, random_stream, random_vepl

EXAMPLES_N = int(os.environ.get("CEPFLOW_PETRI_EXAMPLES", "40"))
#: the same examples on every run (CI stays deterministic); scripts/petri_crossval.py explores.
#: docs/petri.md lists the one known disagreement the long run meets (deadlines of two
#: patterns at one instant: 1 case in 3,000 of its default seeds, session 43).
DERANDOMIZE = os.environ.get("CEPFLOW_PETRI_RANDOM", "") == ""


@st.composite
def cases(draw, windows: bool):
    def pick(options):
        return draw(st.sampled_from(list(options)))

    text = random_program(pick, windows=windows)
    events = random_stream(pick, draw(st.integers(0, 16)))
    seed = draw(st.integers(0, 2**16))
    return text, events, seed


@settings(max_examples=EXAMPLES_N, deadline=None, derandomize=DERANDOMIZE,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases(windows=False))
def test_the_net_outputs_the_engines_complex_events(case) -> None:
    text, events, seed = case
    prog = load_module(parse_epl(text))
    c = compare(prog, events, seed=seed)
    assert c.equal, "\n".join([text, repr(events), *c.differences])


@st.composite
def vepl_cases(draw):
    def pick(options):
        return draw(st.sampled_from(list(options)))

    return (random_vepl(pick), random_stream(pick, draw(st.integers(0, 16))),
            draw(st.integers(0, 2**16)), draw(st.booleans()))


@settings(max_examples=EXAMPLES_N, deadline=None, derandomize=DERANDOMIZE,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(vepl_cases())
def test_vepl_patterns_and_rules_as_nets_agree_with_the_engine(case) -> None:
    # chronicle, immediate and strict (000 §4.4): the oldest partial match takes the event,
    # noise disposes, restricted copies after an iteration, windows and holds-for; a rule
    text, events, seed, close = case
    c = compare(load(text), events, seed=seed, close_windows=close)
    assert c.equal, "\n".join([text, repr(events), *c.differences])


def test_an_or_of_single_events_quits_in_the_net_too() -> None:
    """The net keeps no run at the state of an or's alternatives once one took an event, and
    one event fitting two goes to the one written first (as runtime.matcher, Position.alt):
    without that the net matched a second time through the later alternative."""
    from cepflow.events.event import Event

    schemas = "".join(f"create schema {t}(k int, v int);\n" for t in "ABCD")
    for pattern, stream in [
        ("o0=A -> (o1=D or o2=C) -> every o4=B",
         [("A", 0, 100), ("D", 0, 200), ("C", 0, 300), ("B", 0, 400)]),
        ("(o1=D or o2=C or o3=C) -> every o4=B", [("C", 2, 100), ("B", 0, 700)]),
    ]:
        prog = load_module(parse_epl(schemas + f"@Name('P') select * from pattern [{pattern}];",
                                     "t.epl"))
        evs = [Event(t, (k, i), ts) for i, (t, k, ts) in enumerate(stream)]
        result = compare(prog, evs)
        assert result.equal, (pattern, result.differences)
        assert len(result.engine["P"]) == 1
