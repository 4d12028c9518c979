"""LiveSession: the loop model commit → queries → query events → CEP → rules (000 Fig. 17)."""

from __future__ import annotations

import pytest

from cepflow.compiler.program import Program
from cepflow.events.event import Event
from cepflow.language.parser import parse
from cepflow.live import LiveSession, LiveSessionError
from cepflow.loader import load_module
from cepflow.models import Model, ModelError, parse_metamodel
from cepflow.queries import compile_queries

MM = """metamodel t
class Node { attr v: int  attr tag: str  ref next: Node[*] }
"""
VQL = """
pattern big(N: Node, V: int) { Node.v(N, V); check(V > 10); }
pattern bigNode(N: Node) { find big(N, _); }
private pattern helper(N: Node) { Node.v(N, 3); }
"""
VEPL = """
atomicEvent Ping(n: Node)
queryEvent BigFound(n: Node) as bigNode(n) found
queryEvent BigLost(n: Node) as bigNode(n) lost
queryEvent BigValue(n: Node, v: Integer) as big(n, v) found
complexEvent Flicker(n: Node) { as BigFound(n) -> BigLost(n) -> BigFound(n) }
complexEvent Quiet(n: Node) { as (BigFound(n) -> NOT BigLost(n))[1 s] }
complexEvent Pinged(n: Node) { as Ping(n) -> BigFound(n) }
"""


def program(text: str = VEPL, name: str = "t.vepl") -> Program:
    return load_module(parse(text, name))


def setup(text: str = VEPL, **kw):
    mm = parse_metamodel(MM, "t.mm")
    qs = compile_queries(VQL, mm)
    model = Model(mm)
    with model.transaction(ts=0):
        for i in range(3):
            model.create("Node", f"n{i}", v=0)
    return LiveSession(model, qs, program(text), **kw)


def test_query_events_come_from_the_program_declarations():
    s = setup()
    seen = []
    s.query_events.subscribe(lambda evs: seen.extend((e.type, e.params, e.ts) for e in evs))
    with s.transaction(ts=100):
        s.model.set("n1", "v", 20)
    assert seen == [("BigFound", ("n1",), 100), ("BigValue", ("n1", 20), 100)]
    assert s.stats.commits == 1 and s.stats.changes == 1 and s.stats.query_events == 2


def test_complex_events_reach_callbacks_and_stats():
    s = setup()
    got = []
    s.on_complex_event(lambda ce: got.append((ce.type, ce.params, ce.ts)))
    for ts, v in [(10, 20), (20, 0), (30, 25)]:
        with s.transaction(ts=ts):
            s.model.set("n0", "v", v)
    assert ("Flicker", ("n0",), 30) in got
    assert s.stats.complex_events == len(got)


def test_commit_without_query_events_advances_the_clock_so_windows_expire():
    s = setup()
    got = []
    s.on_complex_event(lambda ce: got.append(ce.type))
    with s.transaction(ts=10):
        s.model.set("n0", "v", 20)
    assert got == []
    with s.transaction(ts=2000):          # an unrelated change, no query event
        s.model.set("n1", "tag", "x")
    assert got == ["Quiet"]


def test_rolled_back_transaction_causes_nothing():
    s = setup()
    with pytest.raises(ModelError), s.transaction(ts=10):
        s.model.set("n0", "v", 20)
        s.model.set("n0", "nope", 1)
    assert s.stats.commits == 0 and s.stats.query_events == 0
    assert s.queries.matches("bigNode") == set()


def test_published_events_share_the_stream_with_query_events():
    s = setup()
    got = []
    s.on_complex_event(lambda ce: got.append((ce.type, ce.params)))
    s.publish(Event("Ping", ("n2",), 5))
    with s.transaction(ts=6):
        s.model.set("n2", "v", 11)
    assert got == [("Pinged", ("n2",))]
    assert s.stats.events_published == 1
    with pytest.raises(LiveSessionError, match="older than the session's clock"):
        s.publish(Event("Ping", ("n2",), 1))


def test_direct_model_changes_are_processed_at_the_next_settle():
    s = setup()
    with s.model.transaction(ts=10):
        s.model.set("n0", "v", 50)
    assert s.stats.query_events == 0          # not yet fed to the CEP engine
    s.settle()
    assert s.stats.query_events == 2


def test_finish_closes_windows_and_detaches():
    s = setup()
    got = []
    s.on_complex_event(lambda ce: got.append(ce.type))
    with s.transaction(ts=10):
        s.model.set("n0", "v", 20)
    s.finish(close_windows=True)
    assert got == ["Quiet"]
    with pytest.raises(LiveSessionError, match="finished"), s.transaction(ts=20):
        pass


def test_default_ts_is_the_session_clock_and_older_ts_is_rejected():
    s = setup()
    s.publish(Event("Ping", ("n0",), 500))
    with s.transaction():
        s.model.set("n0", "v", 20)
    assert s.model.ts == 500
    with pytest.raises(LiveSessionError, match="older"), s.transaction(ts=100):
        pass


@pytest.mark.parametrize("decl, message", [
    ("queryEvent X(n: Node) as nosuch(n) found", "t.vepl:2:12: queryEvent X: unknown query "
     "'nosuch'"),
    ("queryEvent X(n: Node) as helper(n) found", "query 'helper' is private"),
    ("queryEvent X(n: Node, w: Integer) as bigNode(n) found", "parameter(s) w not bound"),
    ("queryEvent X(n: Node) as big(n, v) found", "v bound by the query but not a declared"),
    ("queryEvent X(n: Node) as bigNode(n, m) found", "has 1 parameter(s), 2 given"),
])
def test_query_event_declarations_are_checked_with_locations(decl, message):
    mm = parse_metamodel(MM, "t.mm")
    qs = compile_queries(VQL, mm)
    with pytest.raises(LiveSessionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        LiveSession(Model(mm), qs, program("atomicEvent Ping(n: Node)\n" + decl))


def test_query_event_without_arguments_maps_parameters_positionally():
    s = setup("queryEvent V(n: Node, v: Integer) as big found")
    seen = []
    s.query_events.subscribe(lambda evs: seen.extend((e.type, e.params) for e in evs))
    with s.transaction(ts=1):
        s.model.set("n2", "v", 12)
    assert seen == [("V", ("n2", 12))]


def test_session_without_program_and_bad_arguments():
    mm = parse_metamodel(MM, "t.mm")
    qs = compile_queries(VQL, mm)
    model = Model(mm)
    s = LiveSession(model, qs)
    with s.transaction(ts=1):
        model.create("Node", "a", v=99)
    assert s.stats.commits == 1 and s.stats.query_events == 0
    with pytest.raises(LiveSessionError, match="max_cascade"):
        LiveSession(model, qs, max_cascade=0)
    with model.transaction(), pytest.raises(LiveSessionError, match="outside a transaction"):
        LiveSession(model, qs)
