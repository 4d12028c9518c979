"""The engine's per-type routes (Engine.index_routes) and the matchers' specialised steps
(Matcher.step_for: the plain keyed step, Esper's pair step) take every input event exactly as
the unrouted reference does: each pattern that reads the event's type, or for which it may be
noise, in program order, through the general ``Matcher.process`` — same matches, ids, errors,
partial matches and saved state, on the example programs, on random patterns under every
context, and with events of types the program never declares."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_algebra_properties import compiled, iterated, trailing
from test_algebra_properties import patterns as random_patterns
from test_algebra_properties import streams as random_streams

import cepflow
from cepflow.analysis.domain import load_domain
from cepflow.events.event import Event
from cepflow.language.epl import parse_epl
from cepflow.loader import load_module
from cepflow.runtime.engine import Engine
from cepflow.runtime.state import save_state
from support import tokens_form

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = [ROOT / "examples" / "motorbike" / "motorbike.epl",
            ROOT / "examples" / "temperature" / "alerts.epl",
            ROOT / "examples" / "temperature" / "temperature.vepl",
            ROOT / "examples" / "contractions" / "contractions.epl",
            ROOT / "examples" / "every" / "every.epl",
            ROOT / "examples" / "gesture" / "gesture.vepl"]
CONTEXTS = ("chronicle", "immediate", "strict", "unrestricted", "esper")


class Unrouted(Engine):
    """The reference: no route table and no specialised step — every event, input or
    derived, goes through ``Matcher.process`` of each pattern that reads its type or sees
    every event."""

    def index_routes(self) -> None:
        self._routes = {}
        self._derived = {t: tuple(m.process for m in ms) for t, ms in self.subs_complex.items()}

    def _route(self, t: str) -> tuple[int, tuple, tuple, bool]:
        n = self.host.arity.get(t)
        steps = tuple(m.process for m in self.matchers
                      if t in m.pattern.types or m.pattern.context.sees_every_event)
        runners = tuple(r for r in self.windows if t in r.statement.input_types)
        return (-1 if n is None else n, steps, runners,
                any(ref.name == t for rule in self.program.rules for ref in rule.on))


def _outcome(engine: Engine, events: list[Event]) -> tuple[Any, ...]:
    found = []
    for e in events:
        found.append([(m.type, m.ts, m.match_id, tuple(m.event_refs), m.params)
                      for m in engine.process(Event(e.type, e.params, e.ts, e.id))])
    found.append([(m.type, m.ts, m.match_id, tuple(m.event_refs))
                  for m in engine.finish(close_windows=True)])
    return (found, [(r.source, r.location, r.reason) for r in engine.errors],
            engine.partial_matches(), save_state(engine), engine.stats)


def _both(program: Any, events: list[Event], **kw: Any) -> None:
    routed, reference = Engine(program, **kw), Unrouted(program, **kw)
    assert not reference._routes and routed._routes
    assert _outcome(routed, events) == _outcome(reference, events)


def _stream(program: Any, seed: int, n: int) -> list[Event]:
    """Random events of the program's types (and of one it does not declare)."""
    rng = random.Random(seed)
    kinds = [*load_domain(None, program).events, ("Undeclared", (1,))]
    ts, out = 0, []
    for i in range(n):
        ts += rng.choice([0, 0, 1, 2, 5, 3001])
        t, params = rng.choice(kinds)
        out.append(Event(t, tuple(rng.choice([p, 0, 1]) if isinstance(p, int | float)
                                  and not isinstance(p, bool) else p for p in params),
                         ts, f"e{i}"))
    return out


def test_example_programs_route_as_the_reference() -> None:
    for path in PROGRAMS:
        program = cepflow.load(path)
        for seed in range(3):
            _both(program, _stream(program, seed, 300), strict_actions=False)
            _both(program, _stream(program, seed, 300), strict_actions=False,
                  fast_path=False)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.one_of(random_patterns, trailing, iterated), random_streams(max_size=10),
       st.sampled_from(CONTEXTS), st.booleans())
def test_random_patterns_route_as_the_reference(p: Any, events: list[Event], context: str,
                                                undeclared: bool) -> None:
    program = compiled(p, context)
    if undeclared and events:
        events = [*events[:1], Event("zz", (), events[0].ts), *events[1:]]
    _both(program, events)


def _epl(pattern: str) -> Any:
    return load_module(parse_epl(
        "create schema A(k int, v int); create schema B(k int, v int);\n"
        f"insert into P select a.k as k, b.v as v from pattern [{pattern}]"))


#: Esper's pair shape, A and B two types (their own steps) and one type in both roles
PAIRS = {"two types": _epl("every a=A(a.v > 0) -> b=B(b.k = a.k) where timer:within(3 sec)"),
         "one type": _epl("every a=A(a.v > 0) -> b=A(b.k = a.k) where timer:within(3 sec)"),
         # (a guard on a's fields: the instances stay tokens, EsperSteps._pair_open)
         "guarded": _epl("every a=A(a.v > 0) -> b=B(b.k = a.k, b.v >= a.v) "
                         "where timer:within(3 sec)")}
#: the steps of each (the instances as rows, PairRows, unless a guard reads a's fields)
PAIR_STEPS = {"two types": {"A": "_pair_start", "B": "_pair_end"},
              "one type": {"A": "_pair_row_step", "B": "_pair_row_step"},
              "guarded": {"A": "_pair_open", "B": "_pair_close"}}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(PAIRS)),
       st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 2), st.integers(-1, 2),
                          st.sampled_from([0, 0, 500, 1000, 3000])), max_size=40))
def test_the_pair_steps_route_as_the_reference(which: str, spec: list) -> None:
    """Esper's ``every a -> b [within]`` through its direct steps (timers at the very deadline,
    several instances per key, an undeclared type) against the general token path."""
    ts, events = 0, []
    for i, (t, k, v, dt) in enumerate(spec):
        ts += dt
        events.append(Event(t, (k, v), ts, f"e{i}"))
    program = PAIRS[which]
    steps = {t: Engine(program).matchers[0].step_for(t).__name__ for t in "AB"}
    assert steps == PAIR_STEPS[which]
    _both(program, events)
    # and the direct steps against the general token path (no fast path)
    direct, general = Engine(program), Engine(program, fast_path=False)
    assert _outcome(direct, events)[:3] == _outcome(general, events)[:3]


def test_a_select_list_of_variables_is_read_not_evaluated() -> None:
    """CompiledPattern.select_copy: a select list of variables gives what its evaluators
    give; one that reads the match's time (``@ts``) or computes is evaluated."""
    m = Engine(PAIRS["two types"]).matchers[0]
    assert m.pattern.select_copy == ("a.k", "b.v")
    auto = m.pattern.auto
    for b in ({"a.k": 1, "b.v": 2}, {"a.k": None}, {}):
        evaluated = tuple(f(None, {**b, "@ts": 5}) for f in auto.select)
        assert m.result(b, 5) == (evaluated, dict(zip(auto.params, evaluated, strict=True)))
    for select in ("a.k as k, b.v + 1 as v", "a.k as k, b.v as v, current_timestamp() as t"):
        program = load_module(parse_epl(
            "create schema A(k int, v int); create schema B(k int, v int);\n"
            f"insert into P select {select} from pattern [every a=A -> b=B(b.k = a.k)]"))
        assert Engine(program).matchers[0].pattern.select_copy is None


def _higher(text: str) -> Any:
    return load_module(parse_epl(
        "create schema A(k int, v int); create schema B(k int, v int);\n"
        "create schema C(k int, v int);\n"
        "insert into P select a.k as k, b.v as v from pattern [every a=A(a.v > 0) -> "
        f"b=B(b.k = a.k) where timer:within(3 sec)];\n{text}"))


#: patterns over another's output (P) through their direct steps: P opening, P closing, P
#: in both roles, and a VEPL keyed sequence over a derived type (the row step)
HIGHER = {
    "derived opens": (_higher("insert into Q select p.k as k from pattern [every p=P -> "
                              "c=C(c.k = p.k) where timer:within(2 sec)]"),
                      {"P": "_pair_start"}),
    "derived closes": (_higher("insert into Q select c.k as k from pattern [every c=C -> "
                               "p=P(p.k = c.k) where timer:within(2 sec)]"),
                       {"P": "_pair_end"}),
    "derived twice": (_higher("insert into Q select p.k as k from pattern [every p=P -> "
                              "q=P(q.k = p.k)]"), {"P": "_pair_row_step"}),
    "vepl": (cepflow.load("atomicEvent A(k: Integer, v: Integer)\n"
                          "atomicEvent B(k: Integer, v: Integer)\n"
                          "atomicEvent C(k: Integer, v: Integer)\n"
                          "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) }\n"
                          "complexEvent Q(x: Integer) { as P(x) -> C(x, _) -> P(x) }"),
             {"P": "_row_step"}),
}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(sorted(HIGHER)),
       st.lists(st.tuples(st.sampled_from("ABC"), st.integers(0, 2), st.integers(-1, 2),
                          st.sampled_from([0, 0, 500, 1000, 3000])), max_size=40))
def test_derived_events_take_the_direct_steps_as_the_reference(which: str, spec: list) -> None:
    """A derived event goes to the step its type routes to (Engine._derived, as for input
    events): the same matches, ids, state and statistics as ``Matcher.process`` of each reader
    and as the general token path."""
    ts, events = 0, []
    for i, (t, k, v, dt) in enumerate(spec):
        ts += dt
        events.append(Event(t, (k, v), ts, f"e{i}"))
    program, expected = HIGHER[which]
    engine = Engine(program)
    steps = {t: getattr(s, "__name__", None) or s.func.__name__
             for t, (s,) in engine._derived.items() if t in expected}
    assert steps == expected
    _both(program, events)
    direct, general = Engine(program), Engine(program, fast_path=False)
    assert _outcome(direct, events)[:3] == _outcome(general, events)[:3]
    for cut in (1, 7):  # Engine.run: the program split over batches, derived events stepped
        batched = Engine(program)
        found = [(m.type, m.ts, m.match_id, tuple(m.event_refs), m.params)
                 for i in range(0, len(events), cut) for m in batched.process_batch(
                     [Event(e.type, e.params, e.ts, e.id) for e in events[i:i + cut]])]
        reference = Engine(program, fast_path=False)
        expected = [(m.type, m.ts, m.match_id, tuple(m.event_refs), m.params)
                    for e in events for m in reference.process(Event(e.type, e.params, e.ts,
                                                                     e.id))]
        assert found == expected
        # (the vepl program's P is a kernel pattern of the split since Q, whose last stage
        # reads P's output, is planned: its partial matches after a batch are chain rows,
        # written as the tokens they stand for — docs/state-format.md, "Rows")
        assert tokens_form(save_state(batched)) == tokens_form(save_state(reference))
