"""The key property: incremental deltas equal naive re-evaluation after every commit.

Random models and random edit sequences (creations, deletions with cascades, attribute sets,
reference additions and removals, rolled-back transactions); after each commit, the previous
result with the engine's appeared/disappeared deltas applied must equal the naive evaluator's
result from scratch — for queries covering find, neg find, checks, history functions,
self-joins over base and derived relations, inheritance, constants (also in find and neg find,
after and before variables: the join keys), unification and or.
"""


from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.models import Model, parse_metamodel
from cepflow.queries import compile_queries
from support_queries import check_deltas_equal_reevaluation

MM = parse_metamodel("""
metamodel g
abstract class Node {
  attr v: int
  attr tag: str
  ref next: Node[0..*]
  ref parts: Part[0..*] contains
  ref best: Node[0..1]
}
class A extends Node { attr flag: bool }
class B extends Node {}
class C extends A {}
class Part { attr w: int  ref link: Node[0..1] }
""")

QUERIES = compile_queries("""
pattern edge(X: Node, Y: Node) { Node.next(X, Y); }
pattern path2(X: Node, Z: Node) { Node.next(X, Y); Node.next(Y, Z); }
pattern twoHop(X: Node, Z: Node) { find edge(X, Y); find edge(Y, Z); X != Z; }
pattern mutual(X, Y) { find edge(X, Y); find edge(Y, X); }
pattern selfLoop(X: Node) { Node.next(X, X); }
pattern unified(X: Node, Y: Node) { Node.next(X, Y); Node.best(X, Z); Z == Y; }
pattern bigA(X: A) { A.v(X, V); check(V > 1); }
pattern lonely(X: Node) { neg find edge(X, _); neg find edge(_, X); }
pattern noBigNext(X: Node) { Node.next(X, Y); neg find bigA(Y); }
pattern nestedNeg(X: B) { neg find noBigNext(X); }
pattern matchingPart(X: Node, P: Part) { Node.parts(X, P); Part.w(P, W); Node.v(X, W); }
pattern linkBack(X: Node, P: Part) { Node.parts(X, P); Part.link(P, X); }
pattern linkElsewhere(X: Node) { Node.parts(X, P); Part.link(P, Y); X != Y; find bigA(Y); }
pattern flagged(X: A) { A.flag(X, true); }
pattern tagged(X: Node) { Node.tag(X, "t"); } or { B(X); Node.v(X, 0); }
pattern sumCheck(X: Node, Y: Node) {
    Node.next(X, Y); Node.v(X, VX); Node.v(Y, VY); check(VX + VY == 3);
}
pattern avgHigh(X: Node, V: int) { Node.v(X, V); check(movingAverage(V, 2) >= 1.5); }
pattern noBigA() { neg find bigA(_); }
pattern valueOf(X: C, V: int) { find avgHigh(X, V); } or { C(X); V == 9; }
pattern sameTag(X: Node, Y: Node) { Node.tag(X, T); Node.tag(Y, T); X != Y; check(T != ""); }
pattern hop(X: Node, Y: Node, K: int) { find edge(X, Y); K == 1; } or { find edge(Y, X); K == 2; }
pattern hopBoth(X: Node, Y: Node) { find hop(X, Y, 1); find hop(X, Y, 2); }
pattern hopOneWay(X: Node, Y: Node) { Node.next(X, Y); neg find hop(Y, X, 1); }
pattern valued(K: int, X: Node) { Node.v(X, K); }
pattern valueOne(X: Node, Y: Node) { find edge(X, Y); find valued(1, X); neg find valued(2, Y); }
""", MM)

CLASSES = ["A", "B", "C", "Part"]

# an operation: (kind, i, j, k) — indices resolved against the live objects when applied
OP = st.tuples(st.sampled_from(["create", "create", "delete", "set", "set", "set", "add", "add",
                                "remove", "best", "link"]),
               st.integers(0, 30), st.integers(0, 30), st.integers(0, 3))
TRANSACTION = st.tuples(st.lists(OP, max_size=8), st.booleans())


def apply_op(model: Model, op: tuple) -> None:
    kind, i, j, k = op
    objs = list(model.objects())
    if kind == "create" or not objs:
        cls = CLASSES[i % 4]
        attrs = {"w": k} if cls == "Part" else {"v": k}
        model.create(cls, **attrs)
        return
    o, t = objs[i % len(objs)], objs[j % len(objs)]
    if kind == "delete":
        model.delete(o)
    elif kind == "set":
        if o.cls.name == "Part":
            model.set(o, "w", k)
        else:
            feature = ["v", "v", "tag", "flag"][j % 4]
            value = {"v": k, "tag": ["", "t", "u", "t"][k], "flag": k % 2 == 1}[feature]
            if feature in o.cls.attributes:
                model.set(o, feature, value)
    elif kind == "add":
        model.add(o, ["next", "next", "parts", "next"][k], t)
    elif kind == "remove":
        targets = o.targets("next") if "next" in o.cls.references else ()
        if targets:
            model.remove(o, "next", targets[j % len(targets)])
    elif kind == "best":
        model.set(o, "best", None if k == 0 else t)
    else:
        model.set(o, "link", None if k == 0 else t)


@settings(max_examples=80, deadline=None)
@given(st.lists(OP, max_size=14), st.lists(TRANSACTION, min_size=1, max_size=7))
def test_incremental_deltas_equal_naive_reevaluation(setup, transactions):
    check_deltas_equal_reevaluation(MM, QUERIES, apply_op, setup, transactions)
