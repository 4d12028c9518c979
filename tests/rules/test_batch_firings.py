"""Rules fire over a batch as over the same events fed one by one: the same actions, called
in the same order with the same complex events, the same failures of actions that raise
(recorded, the next firing runs) and the same statistics — also when every complex event of
the batch is the only one of its input event and its type has one rule with an action, which
the batch calls in one loop (runtime.host.Host.fire_each: gesture's ``nextSlide``)."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.compiler.program import compile_module
from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.runtime.engine import Engine
from cepflow.runtime.host import Host

DECLS = "atomicEvent A(k: Int)\natomicEvent B(k: Int)\natomicEvent C(k: Int)\n"
TYPES = "ABC"

#: rule sets over the patterns P and Q: one rule on P (the one loop), a rule that raises on
#: some complex events, two rules on P, rules on both (priority across one event's
#: detections), a rule with an unregistered action beside one with an action, a rule on an
#: input type too
RULES = (
    "rule r1 on P action rec1\n",
    "rule r1 on P action odd\n",
    "rule r1 on P action rec1\nrule r2 on P priority 5 action rec2\n",
    "rule r1 on P action rec1\nrule r2 on Q priority 3 action rec2\n",
    "rule r1 on P, Q action odd\n",
    "rule r1 on P action nothing\nrule r2 on P action rec2\n",
    "rule r1 on P action rec1\nrule r2 on C action rec2\n",
    "rule r1 on Q action rec1\n",
)


@st.composite
def chains(draw: st.DrawFn) -> str:
    types = draw(st.permutations(TYPES))[: draw(st.integers(1, 3))]
    return " -> ".join(f"{t}(k)" for t in types)


streams = st.lists(st.tuples(st.sampled_from(TYPES), st.integers(0, 3), st.integers(0, 2)),
                   max_size=80)


def make(spec) -> list[Event]:
    ts, out = 0, []
    for i, (t, k, dt) in enumerate(spec):
        ts += dt
        out.append(Event(t, (k,), ts, id=f"e{i}"))
    return out


def engine(prog, log: list) -> Engine:
    def rec(name: str):
        return lambda act: log.append((name, act.rule.name, act.event.type, act.event.ts,
                                       act.event.params, getattr(act.event, "match_id", None)))

    def odd(act) -> None:
        log.append(("odd", act.rule.name, act.event.type, act.event.ts))
        if act.event.ts % 2:
            raise ValueError("odd")

    return Engine(prog, actions={"rec1": rec("rec1"), "rec2": rec("rec2"), "odd": odd},
                  strict_actions=False)


def errors(eng: Engine) -> list:
    return [(r.source, r.location, r.field, r.reason) for r in eng.errors]


def found(ms) -> list:
    return [(m.type, m.ts, tuple(m.event_refs), m.params, m.match_id) for m in ms]


@settings(max_examples=150, deadline=None)
@given(chains(), chains(), st.sampled_from(RULES), streams,
       st.lists(st.integers(0, 80), max_size=3))
def test_batch_fires_as_event_by_event(p: str, q: str, rules: str, spec, cuts) -> None:
    prog = compile_module(parse(DECLS + f"complexEvent P(k: Int) {{ as {p} }}\n"
                                f"complexEvent Q(k: Int) {{ as {q} }}\n" + rules))
    logs: dict[str, list] = {"one": [], "many": [], "run": []}
    one, many, streamed = (engine(prog, logs[tag]) for tag in logs)
    assert many._chains is not None
    ref = found(m for e in make(spec) for m in one.process(e))
    evs, got = make(spec), []
    for lo, hi in itertools.pairwise(sorted({0, len(spec),
                                             *(min(c, len(spec)) for c in cuts)})):
        got += found(many.process_batch(evs[lo:hi]))
    assert got == ref
    assert found(streamed.run(make(spec), batch_size=7)) == ref
    for eng, tag in ((many, "many"), (streamed, "run")):
        assert logs[tag] == logs["one"]
        assert errors(eng) == errors(one)
        assert eng.stats == one.stats


def test_gesture_fires_in_one_loop(monkeypatch) -> None:
    """The gesture example's batches fire ``nextSlide`` through fire_each's one loop (a spy:
    no complex event goes through fire_one), once per gesture, in detection order."""
    from pathlib import Path

    from cepflow.language.parser import parse_file

    root = Path(__file__).resolve().parents[2] / "examples" / "gesture"
    prog = compile_module(parse_file(root / "gesture.vepl"))
    one_by_one = []
    monkeypatch.setattr(Host, "fire_one", lambda self, ev: one_by_one.append(ev))

    def events() -> list[Event]:
        cycle = ("ForwardStartFound", "RightHandAboveHeadFound", "ForwardStartLost",
                 "ForwardEndFound", "RightHandAboveHeadLost", "ForwardEndLost")
        return [Event(t, (f"body{b}",), 40 * (6 * c + i)) for c in range(20)
                for i, t in enumerate(cycle) for b in range(3)]

    seen: list = []
    eng = Engine(prog, actions={"gesture.next_slide": lambda act: seen.append(
        (act.event.match_id, act.event.params))})
    out = list(eng.run(events(), batch_size=50))
    assert not one_by_one
    assert seen == [(m.match_id, m.params) for m in out] and len(out) == 60
    assert eng.stats.rule_firings == 60


def test_one_events_detections_fire_by_priority() -> None:
    """Two complex events of one input event fire by the rules' priority across both (Q's
    rule first), not one by one in detection order: the batch sees the shared position."""
    prog = compile_module(parse(DECLS + "complexEvent P(k: Int) { as A(k) -> B(k) }\n"
                                "complexEvent Q(k: Int) { as B(k) }\n" + RULES[3]))
    spec = [("A", 1, 0), ("B", 1, 1), ("B", 2, 1), ("A", 2, 1), ("B", 2, 0)]
    logs: dict[str, list] = {"one": [], "many": []}
    one, many = engine(prog, logs["one"]), engine(prog, logs["many"])
    ref = found(m for e in make(spec) for m in one.process(e))
    assert found(many.process_batch(make(spec))) == ref
    assert [entry[:3] for entry in logs["one"]][:2] == [("rec2", "r2", "Q"), ("rec1", "r1", "P")]
    assert logs["many"] == logs["one"]
