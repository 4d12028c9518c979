"""Reactive rules: life cycle, priorities, conflict resolution, feedback, loop guard."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.live import LiveSession
from cepflow.loader import load_module
from cepflow.models import Model, parse_metamodel
from cepflow.queries import compile_queries
from cepflow.rules import RuleCascadeError, RuleError, event_rule, query_rule
from cepflow.runtime.engine import Engine

MM = """metamodel t
class Node { attr v: int  attr tag: str  ref next: Node[*] }
"""
VQL = """
pattern big(N: Node, V: int) { Node.v(N, V); check(V > 10); }
pattern bigNode(N: Node) { find big(N, _); }
pattern edge(A: Node, B: Node) { Node.next(A, B); }
"""
VEPL = """
atomicEvent A(x: Integer)
atomicEvent B(x: Integer)
queryEvent BigFound(n: Node) as bigNode(n) found
queryEvent BigLost(n: Node) as bigNode(n) lost
complexEvent P(x: Integer) { as A(x) -> B(x) }
complexEvent Q(x: Integer) { as P(x) -> B(x) }
"""


def make(vepl: str = VEPL, rules=(), actions=None, nodes: int = 4, **kw) -> LiveSession:
    mm = parse_metamodel(MM, "t.mm")
    qs = compile_queries(VQL, mm)
    model = Model(mm)
    with model.transaction(ts=0):
        for i in range(nodes):
            model.create("Node", f"n{i}", v=0)
        for i in range(nodes - 1):
            model.add(f"n{i}", "next", f"n{i + 1}")
    return LiveSession(model, qs, load_module(parse(vepl, "t.vepl")), actions=actions or {},
                       rules=rules, **kw)


def recorder(log: list):
    def rec(act):
        log.append((act.rule.name, act.kind, act.event.type if act.event is not None else None,
                    tuple(act.bindings.values())))
    return rec


# ---------------------------------------------------------------- order and priorities
VEPL_RULES = VEPL + """
rule low on P priority 1 action rec
rule high on P priority 5 action rec
rule onA on A priority 3 action rec
rule onA2 on A action rec
rule onQ on Q priority 5 action rec
rule onB on B priority 2 action rec
"""


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AB"), st.integers(1, 2)), max_size=12))
def test_vepl_rules_fire_in_the_engines_order(events):
    """The agenda owns the VEPL rules in a session; fed one event per settle, it fires them
    in exactly the order the CEP engine's own rule firing does."""
    engine_log: list = []
    session_log: list = []
    prog = load_module(parse(VEPL_RULES, "t.vepl"))
    engine = Engine(prog, actions={"rec": lambda a: engine_log.append(
        (a.rule.name, a.event.type, tuple(a.bindings.values())))})
    s = make(VEPL_RULES, actions={"rec": lambda a: session_log.append(
        (a.rule.name, a.event.type, tuple(a.bindings.values())))})
    for i, (t, x) in enumerate(events):
        engine.process(Event(t, (x,), i + 1))
        s.publish(Event(t, (x,), i + 1))
    assert session_log == engine_log
    assert s.stats.rule_firings == engine.stats.rule_firings == len(engine_log)


def test_priority_then_fifo_then_declaration_order_across_query_and_event_rules():
    log: list = []
    rec = recorder(log)
    s = make(rules=[
        query_rule("qLow", "bigNode", rec, priority=0),
        event_rule("eHigh", "BigFound", rec, priority=9),
        query_rule("qHigh", "bigNode", rec, priority=9),
        event_rule("eLow", "BigFound", rec, priority=0),
    ])
    with s.transaction(ts=1):
        s.model.set("n2", "v", 20)
        s.model.set("n1", "v", 30)
    # priority 9 first: query changes before the commit's events, matches sorted (n1, n2)
    assert [(n, b) for n, _, _, b in log] == [
        ("qHigh", ("n1",)), ("qHigh", ("n2",)), ("eHigh", ("n1",)), ("eHigh", ("n2",)),
        ("qLow", ("n1",)), ("qLow", ("n2",)), ("eLow", ("n1",)), ("eLow", ("n2",))]


def test_conflict_set_shows_the_firing_order():
    s = make(rules=[query_rule("a", "bigNode", lambda a: None, priority=1),
                    query_rule("b", "bigNode", lambda a: None, priority=2)])
    with s.model.transaction(ts=1):            # directly: not yet settled
        s.model.set("n0", "v", 20)
    s._absorb()
    assert [a.rule.name for a in s.agenda.conflict_set()] == ["b", "a"]
    assert all(a.state == "appeared" for a in s.agenda.conflict_set())


# ---------------------------------------------------------------- query rule life cycle
def test_query_rule_life_cycle_appeared_updated_disappeared():
    log: list = []
    s = make(rules=[query_rule("watch", "bigNode", recorder(log),
                               on=("appeared", "updated", "disappeared"))])
    with s.transaction(ts=1):
        s.model.set("n0", "v", 20)
    with s.transaction(ts=2):
        s.model.set("n0", "v", 30)              # still big: updated
    with s.transaction(ts=3):
        s.model.set("n0", "tag", "x")           # the object changed: updated
    with s.transaction(ts=4):
        s.model.set("n1", "tag", "y")           # another object: nothing
    with s.transaction(ts=5):
        s.model.set("n0", "v", 0)
    assert [(k, b) for _, k, _, b in log] == [
        ("appeared", ("n0",)), ("updated", ("n0",)), ("updated", ("n0",)),
        ("disappeared", ("n0",))]
    assert s.agenda.activations() == []


def test_match_gone_before_firing_never_fires_and_phases_pass_through():
    log: list = []

    def undo(act):
        act.model.set(act.bindings["N"], "v", 0)

    s = make(rules=[query_rule("guard", "bigNode", undo, priority=10),
                    query_rule("slow", "bigNode", recorder(log)),
                    query_rule("gone", "bigNode", recorder(log), on="disappeared")])
    with s.transaction(ts=1):
        s.model.set("n3", "v", 20)
    # slow's activation went appeared -> inactive without firing; gone saw the disappearance
    assert log == [("gone", "disappeared", None, ("n3",))]


def test_existing_matches_appear_to_a_rule_added_later():
    log: list = []
    s = make()
    with s.transaction(ts=1):
        s.model.set("n0", "v", 20)
    s.add_rule(query_rule("late", "bigNode", recorder(log)))
    s.settle()
    assert log == [("late", "appeared", None, ("n0",))]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0, 5, 20, 30])),
                         min_size=1, max_size=3), max_size=8))
def test_appeared_minus_disappeared_firings_track_the_match_set(commits):
    """Law: a rule on appeared+disappeared has, after every settle, seen exactly the current
    matches appear and not yet disappear."""
    live: set = set()

    def track(act):
        if act.kind == "appeared":
            assert act.match not in live
            live.add(act.match)
        else:
            live.remove(act.match)

    s = make(rules=[query_rule("track", "big", track, on=("appeared", "disappeared"))])
    for ts, edits in enumerate(commits, 1):
        with s.transaction(ts=ts):
            for i, v in edits:
                s.model.set(f"n{i}", "v", v)
        assert live == s.queries.matches("big")


# ---------------------------------------------------------------- feedback and loop guard
def test_rule_changes_feed_back_through_queries_and_cep():
    """A rule on the BigFound query event makes the next node big: its own commit yields new
    query events, which trigger the rule again, down the chain of nodes."""
    order: list = []

    def spread(act):
        order.append(act.bindings["n"])
        for nxt in act.model[act.bindings["n"]].targets("next"):
            act.model.set(nxt, "v", 99)

    s = make(VEPL + "rule spread on BigFound action spread", actions={"spread": spread})
    with s.transaction(ts=1):
        s.model.set("n0", "v", 50)
    assert order == ["n0", "n1", "n2", "n3"]
    assert s.queries.matches("bigNode") == {("n0",), ("n1",), ("n2",), ("n3",)}
    assert s.stats.rule_firings == 4 and s.stats.commits == 4
    assert s.model.ts == 1


def test_emitted_events_enter_the_stream_after_the_action():
    got: list = []

    def emit_b(act):
        act.emit(Event("B", act.event.params, 0))

    s = make(VEPL + "rule echo on A action emit_b", actions={"emit_b": emit_b})
    s.on_complex_event(lambda ce: got.append((ce.type, ce.params, ce.ts)))
    s.publish(Event("A", (7,), 10))
    assert got == [("P", (7,), 10)]          # the emitted B is stamped at the session's clock
    assert s.stats.events_published == 2


def test_loop_guard_names_the_rule_chain():
    def down(act):
        act.model.set(act.bindings["n"], "v", 0)

    def up(act):
        act.model.set(act.bindings["n"], "v", 20)

    s = make(VEPL + "rule down on BigFound action down\nrule up on BigLost action up",
             actions={"down": down, "up": up}, max_cascade=25)
    with pytest.raises(RuleCascadeError, match=r"more than 25 rule firings.*down -> up -> down"
                       ) as err, s.transaction(ts=1):
        s.model.set("n0", "v", 20)
    assert set(err.value.chain) == {"down", "up"} and len(err.value.chain) == 26
    assert s.agenda.conflict_set() == []
    with s.transaction(ts=2):                 # still usable afterwards
        s.model.set("n1", "tag", "ok")


def test_failing_action_rolls_back_its_changes_and_names_the_rule():
    def bad(act):
        act.model.set("n3", "v", 77)
        raise RuntimeError("boom")

    s = make(rules=[query_rule("bad", "bigNode", bad)])
    with pytest.raises(RuntimeError, match="boom") as err, s.transaction(ts=1):
        s.model.set("n0", "v", 20)
    assert any("while firing rule 'bad'" in n for n in err.value.__notes__)
    assert s.model["n3"]["v"] == 0              # the firing was rolled back
    assert s.model["n0"]["v"] == 20             # the user's commit stands


def test_on_error_skip_records_a_failing_action_and_fires_the_next():
    """``on_error="skip"``: the failing firing is rolled back and recorded (kind error, as
    the CEP engine's records), the next activation fires, nothing propagates."""
    log: list = []

    def bad(act):
        act.model.set("n3", "v", 77)
        raise RuntimeError("boom")

    s = make(rules=[query_rule("bad", "bigNode", bad, priority=2),
                    query_rule("good", "bigNode", recorder(log))], on_error="skip")
    with s.transaction(ts=1):
        s.model.set("n0", "v", 20)
    assert s.model["n3"]["v"] == 0 and s.model["n0"]["v"] == 20
    assert [e[0] for e in log] == ["good"]
    (rec,) = s.errors
    assert rec.source == "rule bad" and rec.field == "action bad"
    assert rec.reason.endswith("`action bad` failed: RuntimeError: boom")
    assert s.stats.rule_firings == 2 and s.engine.stats.errors == 1


def test_rule_set_up_errors():
    with pytest.raises(RuleError, match="action 'nope' is not registered"):
        make(VEPL + "rule r on P action nope")
    s = make()
    with pytest.raises(RuleError, match="unknown event type 'Zzz'"):
        s.add_rule(event_rule("r", "Zzz", lambda a: None))
    with pytest.raises(RuleError, match="unknown or private query 'nosuch'"):
        s.add_rule(query_rule("r", "nosuch", lambda a: None))
    with pytest.raises(RuleError, match="'on' must name"):
        query_rule("r", "bigNode", lambda a: None, on="changed")
    s.add_rule(event_rule("r", "P", lambda a: None))
    with pytest.raises(RuleError, match="already exists"):
        s.add_rule(event_rule("r", "P", lambda a: None))
