"""Query semantics on small hand-written models, incremental engine and naive oracle alike."""

from pathlib import Path

import pytest

from cepflow.models import Model, parse_metamodel, read_metamodel
from cepflow.queries import (
    FunctionRegistry,
    History,
    QueryEngine,
    compile_queries,
    evaluate,
    load_queries,
)

DATA = Path(__file__).parent / "data"
KINECT = read_metamodel(DATA / "kinect.mm")
CPS = read_metamodel(DATA / "cps.mm")


class Watch:
    """An engine on a model plus an independent oracle; checks they agree after each commit."""

    def __init__(self, model: Model, text: str, functions: FunctionRegistry | None = None):
        self.model = model
        self.queries = compile_queries(text, model.metamodel, functions=functions)
        self.history = History(self.queries.history_sites(), self.queries.functions,
                               model.metamodel)
        self.history.reset(model)
        model.subscribe(self.history.apply)
        self.engine = QueryEngine(model, self.queries)
        self.updates = []
        self.engine.subscribe(self.updates.append)

    def __getitem__(self, query: str) -> set:
        expected = evaluate(self.queries, self.model, self.history)[query]
        assert self.engine.matches(query) == expected
        return expected

    def delta(self, query: str) -> tuple[set, set]:
        d = self.updates[-1][query]
        return set(d.appeared), set(d.disappeared)


# ---------------------------------------------------------------- CPS validation (000 §3, §6)

VALIDATION = """
// Fig. 10: the available CPU of a host can never exceed its total
pattern availableGreaterThanTotalCpu(Host: HostInstance) {
    HostInstance.availableCpu(Host, Available);
    HostInstance.totalCpu(Host, Total);
    check(Available > Total);
}
"""


def test_cps_validation_query_follows_attribute_changes():
    m = Model(CPS)
    with m.transaction(ts=0):
        h1 = m.create("HostInstance", "h1", totalCpu=8, availableCpu=4)
        m.create("HostInstance", "h2", totalCpu=8, availableCpu=8)
    w = Watch(m, VALIDATION)
    q = "availableGreaterThanTotalCpu"
    assert w[q] == set()
    with m.transaction(ts=10):
        m.set(h1, "availableCpu", 10)  # Phase 1 of 000 §6: 10 > 8
    assert w[q] == {("h1",)} and w.delta(q) == ({("h1",)}, set())
    assert w.updates[-1].ts == 10
    with m.transaction(ts=20):
        m.set("h2", "totalCpu", 2)
        m.set("h2", "availableCpu", 3)
        m.set(h1, "availableCpu", 8)   # the quick fix
    assert w[q] == {("h2",)} and w.delta(q) == ({("h2",)}, {("h1",)})
    m.delete("h2")
    assert w[q] == set() and w.delta(q) == (set(), {("h2",)})


def test_a_listener_may_repair_the_model_it_watches():
    m = Model(CPS)
    h = m.create("HostInstance", "h", totalCpu=8, availableCpu=4)
    w = Watch(m, VALIDATION)
    q = "availableGreaterThanTotalCpu"

    def quick_fix(update):  # a reactive rule: decrease the available CPUs (000 §6)
        for (host,) in update[q].appeared:
            m.set(host, "availableCpu", m[host]["totalCpu"])

    w.engine.subscribe(quick_fix)
    m.set(h, "availableCpu", 10)
    assert [u[q].appeared for u in w.updates[-2:]] == [(("h",),), ()]
    assert w.updates[-1][q].disappeared == (("h",),)
    assert w[q] == set() and h["availableCpu"] == 8


def test_no_delta_when_a_change_is_undone_within_the_commit():
    m = Model(CPS)
    h = m.create("HostInstance", "h", totalCpu=8, availableCpu=9)
    w = Watch(m, VALIDATION)
    with m.transaction():
        m.set(h, "availableCpu", 1)
        m.set(h, "availableCpu", 9)
    assert w.updates[-1].deltas == ()
    with m.transaction():
        m.create("HostInstance", "tmp", availableCpu=1)
        m.delete("tmp")
    assert w.updates[-1].deltas == ()


# ---------------------------------------------------------------- gesture (002 Listings 1-2)


def body(m: Model, i: int, *, hand_x: float = 0.0, hand_y: float = 1.0) -> None:
    b = m.create("Body", f"B{i}")
    parts = {"Head": (0.0, 1.7), "RightHand": (hand_x, hand_y), "RightElbow": (0.4, 1.3),
             "RightShoulder": (0.2, 1.4)}
    for cls, (x, y) in parts.items():
        m.set(b, cls[0].lower() + cls[1:], m.create(cls, f"{cls}{i}", x=x, y=y))


def test_forward_start_with_neg_find_and_moving_average():
    m = Model(KINECT)
    with m.transaction(ts=0):
        body(m, 0)
        body(m, 1)
    queries = (DATA / "gesture.vql").read_text()
    w = Watch(m, queries)
    fs, above = "ForwardStart", "rightHandAboveHead"
    assert w[fs] == set() and w[above] == set()
    with m.transaction(ts=40):           # B0 stretches the arm at shoulder height
        m.set("RightHand0", "x", 1.0)
        m.set("RightHand0", "y", 1.4)
    assert w[fs] == {("B0", "RightHand0", "RightElbow0", "RightShoulder0", "Head0")}
    # the hand goes up; the moving average over 3 frames lags: (1.0 + 1.4 + 2.5) / 3 < 1.7
    with m.transaction(ts=80):
        m.set("RightHand0", "y", 2.5)
    assert w[above] == set() and len(w[fs]) == 1
    with m.transaction(ts=120):          # (1.4 + 2.5 + 2.5) / 3 > 1.7: above the head
        m.set("RightHand0", "y", 2.5)   # an unchanged value is still an observation
    assert w[above] == {("B0", "RightHand0", "Head0")}
    assert w[fs] == set() and w.delta(fs)[1] == {
        ("B0", "RightHand0", "RightElbow0", "RightShoulder0", "Head0")}
    with m.transaction(ts=160):          # B1 stretches too; B0 lowers the hand: the average
        m.set("RightHand1", "x", 1.0)    # (2.5 + 2.5 + 0.5) / 3 is still above the head
        m.set("RightHand0", "y", 0.5)
    assert {b for b, *_ in w[fs]} == {"B1"} and len(w[above]) == 1
    with m.transaction(ts=200):
        m.set("RightHand0", "y", 0.0)    # (2.5 + 0.5 + 0) / 3 < 1.7
    assert {b for b, *_ in w[fs]} == {"B0", "B1"} and w[above] == set()
    m.delete("RightElbow1")              # a body losing a joint loses the posture
    assert {b for b, *_ in w[fs]} == {"B0"}
    m.delete("B0")                       # deleting the body deletes its contents
    assert w[fs] == set() and len(m) == 4


def test_engine_starts_on_a_populated_model_and_keeps_history():
    m = Model(KINECT)
    with m.transaction(ts=0):
        body(m, 0, hand_x=1.0, hand_y=1.0)
    queries = load_queries(DATA / "gesture.vql", KINECT)
    engine = QueryEngine(m, queries)
    assert {b for b, *_ in engine.matches("ForwardStart")} == {"B0"}
    for ts in (40, 80, 120):
        with m.transaction(ts=ts):
            m.set("RightHand0", "y", 3.0)
    assert engine.matches("ForwardStart") == set()
    assert engine.sorted_matches("rightHandAboveHead") == [("B0", "RightHand0", "Head0")]
    with pytest.raises(KeyError, match="no query 'nope'"):
        engine.matches("nope")


# ---------------------------------------------------------------- language features

FEATURES = parse_metamodel("""
metamodel f
abstract class Node { attr v: int  attr tag: str  ref next: Node[0..*] }
class A extends Node { attr flag: bool }
class B extends Node {}
class C extends A {}
""")


def graph(edges: str, **kinds: str) -> Model:
    """``graph("a>b b>c", a="A")``: nodes of class B unless named in ``kinds``."""
    m = Model(FEATURES)
    with m.transaction():
        for pair in edges.split():
            src, dst = pair.split(">")
            for n in (src, dst):
                if n not in m:
                    m.create(kinds.get(n, "B"), n)
            m.add(src, "next", dst)
    return m


def test_superclass_types_match_subclass_instances():
    m = graph("a>b b>c", a="A", c="C")
    w = Watch(m, """
        pattern anyA(X: A) { }
        pattern nodes(X: Node) { }
        pattern fromA(X: A, Y) { Node.next(X, Y); }
        pattern aToA(X: A, Y: A) { Node.next(X, Y); }
    """)
    assert w["anyA"] == {("a",), ("c",)}
    assert w["nodes"] == {("a",), ("b",), ("c",)}
    assert w["fromA"] == {("a", "b")}
    assert w["aToA"] == set()
    m.add("c", "next", "a")
    assert w["aToA"] == {("c", "a")} and w["fromA"] == {("a", "b"), ("c", "a")}


def test_find_neg_find_and_anonymous_variables():
    m = graph("a>b b>c c>a d>d e>a")
    w = Watch(m, """
        pattern edge(X: Node, Y: Node) { Node.next(X, Y); }
        pattern hasOut(X: Node) { find edge(X, _); }
        pattern sink(X: Node) { neg find edge(X, _); }
        pattern source(X: Node) { neg find edge(_, X); }
        pattern twoHop(X: Node, Z: Node) { find edge(X, Y); find edge(Y, Z); }
        pattern loop(X: Node) { Node.next(X, X); }
        pattern loopByUnification(X: Node) { Node.next(X, Y); X == Y; }
        pattern notLoop(X: Node, Y: Node) { Node.next(X, Y); X != Y; }
    """)
    assert w["hasOut"] == {(n,) for n in "abcde"}
    assert w["source"] == {("e",)}
    assert ("a", "c") in w["twoHop"] and ("e", "b") in w["twoHop"]
    assert w["loop"] == w["loopByUnification"] == {("d",)}
    assert ("d", "d") not in w["notLoop"] and len(w["notLoop"]) == 4
    with m.transaction():
        m.create("B", "f")
        m.remove("e", "next", "a")
    assert w["sink"] == {("e",), ("f",)} and w["source"] == {("e",), ("f",)}
    assert w.delta("sink") == ({("e",), ("f",)}, set())


def test_constants_or_bodies_and_bound_constants():
    m = graph("a>b", a="A")
    with m.transaction():
        m.set("a", "v", 3)
        m.set("b", "tag", "t")
    w = Watch(m, """
        pattern three(X: Node) { Node.v(X, 3); }
        pattern tagged(X: Node) { Node.tag(X, "t"); } or { A.flag(X, true); }
        pattern withValue(X: Node, V: int) { Node.v(X, V); V != 0; } or { B(X); V == 7; }
        pattern seven(V: int) { V == 7; }
        pattern noThree() { neg find three(_); }
    """)
    assert w["three"] == {("a",)}
    assert w["tagged"] == {("b",)}
    assert w["withValue"] == {("a", 3), ("b", 7)}
    assert w["seven"] == {(7,)}
    assert w["noThree"] == set()
    with m.transaction():
        m.set("a", "flag", True)
        m.set("a", "v", 0)
    assert w["tagged"] == {("a",), ("b",)} and w["three"] == set()
    assert w["noThree"] == {()} and w.delta("noThree") == ({()}, set())
    assert w["withValue"] == {("b", 7)}


def test_join_through_a_value_variable():
    m = graph("a>b c>d")
    with m.transaction():
        for n, v in zip("abcd", (1, 2, 2, 5), strict=True):
            m.set(n, "v", v)
    w = Watch(m, """
        pattern sameValue(X: Node, Y: Node) { Node.v(X, V); Node.v(Y, V); X != Y; }
        pattern sumIs(X: Node, Y: Node) {
            Node.next(X, Y); Node.v(X, VX); Node.v(Y, VY); check(VX + VY == 3);
        }
    """)
    assert w["sameValue"] == {("b", "c"), ("c", "b")}
    assert w["sumIs"] == {("a", "b")}
    m.set("d", "v", 1)
    assert w["sameValue"] == {("b", "c"), ("c", "b"), ("a", "d"), ("d", "a")}
    assert w["sumIs"] == {("a", "b"), ("c", "d")}


def test_registered_functions_and_failing_functions():
    m = graph("a>b")
    m.set("a", "v", 4)
    registry = FunctionRegistry({"half": lambda x: x / 2, "boom": lambda x: 1 / 0})
    w = Watch(m, """
        pattern big(X: Node) { Node.v(X, V); check(half(V) >= 2); }
        pattern broken(X: Node) { Node.v(X, V); check(boom(V) > 0); }
    """, registry)
    assert w["big"] == {("a",)}
    assert w["broken"] == set()  # a function that raises makes the check false


def test_private_patterns_are_computed_but_not_reported():
    m = graph("a>b")
    w = Watch(m, """
        private pattern edge(X: Node, Y: Node) { Node.next(X, Y); }
        pattern start(X: Node) { find edge(X, _); }
    """)
    m.add("b", "next", "a")
    assert [d.query for d in w.updates[-1].deltas] == ["start"]
    assert w["edge"] == {("a", "b"), ("b", "a")}


def test_deleting_an_object_removes_its_matches_everywhere():
    m = graph("a>b b>c c>a", a="A")
    w = Watch(m, """
        pattern edge(X: Node, Y: Node) { Node.next(X, Y); }
        pattern cycle3(X: Node) { find edge(X, Y); find edge(Y, Z); find edge(Z, X); }
        pattern notInCycle(X: Node) { neg find cycle3(X); }
    """)
    assert w["cycle3"] == {("a",), ("b",), ("c",)} and w["notInCycle"] == set()
    m.delete("b")
    assert w["cycle3"] == set() and w["edge"] == {("c", "a")}
    assert w["notInCycle"] == {("a",), ("c",)}


def test_update_lists_public_queries_in_declaration_order():
    m = graph("a>b")
    w = Watch(m, """
        pattern z(X: Node) { Node.next(X, _); }
        pattern a(X: Node) { find z(X); }
    """)
    m.add("b", "next", "a")
    assert [d.query for d in w.updates[-1].deltas] == ["z", "a"]
    assert w.updates[-1]["missing"].appeared == ()


def test_engine_rejects_queries_of_another_metamodel():
    qs = compile_queries("pattern p(H: HostInstance) {}", CPS)
    with pytest.raises(ValueError, match="compiled for metamodel cps"):
        QueryEngine(Model(KINECT), qs)


def test_engine_starts_from_a_committed_state():
    m = graph("a>b")
    qs = compile_queries("pattern e(X: Node) { Node.next(X, _); }", FEATURES)
    with pytest.raises(ValueError, match="outside a transaction"), m.transaction():
        QueryEngine(m, qs)


def test_closed_engine_stops_following():
    m = graph("a>b")
    w = Watch(m, "pattern e(X: Node) { Node.next(X, _); }")
    w.engine.close()
    m.add("b", "next", "a")
    assert w.engine.matches("e") == {("a",)}
