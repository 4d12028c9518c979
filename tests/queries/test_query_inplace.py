"""In-place updates of attribute and history values (docs/models.md, "How a commit is
processed"): a value that only filters read is updated with one join, and several values of
one object changed in one commit (a frame's x and y) with one join for all. Law: the deltas
still equal naive re-evaluation after every commit, and history functions still equal their
definition over the commit history.
"""

from collections import defaultdict

from hypothesis import given, settings
from hypothesis import strategies as st

from cepflow.models import Model, parse_metamodel
from cepflow.queries import History, QueryEngine, compile_queries
from support_queries import check_deltas_equal_reevaluation, run_ops

MM = parse_metamodel("""
metamodel p
class P { attr x: int  attr y: int  ref next: P[0..*] }
""")

QUERIES = compile_queries("""
pattern both(X: P) { P.x(X, A); P.y(X, B); check(movingAverage(A, 2) + movingAverage(B, 2) > 2); }
pattern crossed(X: P, Y: P) {
    P.next(X, Y); P.x(X, A); P.y(Y, B); check(movingAverage(A, 2) > movingAverage(B, 2));
}
pattern windows(X: P) { P.x(X, A); check(movingAverage(A, 2) > movingAverage(A, 3)); }
pattern keepsValue(X: P, A: int) { P.x(X, A); P.y(X, B); check(movingAverage(B, 2) >= 1); }
pattern band(X: P) { P.x(X, A); check(A > 0); check(A < 3); }
pattern notTwo(X: P) { P.y(X, B); B != 2; }
pattern pairSum(X: P, Y: P) { P.next(X, Y); P.x(X, A); P.x(Y, C); check(A + C == 3); }
pattern unread(X: P) { P.x(X, A); P.y(X, _B); check(A >= 0); }
""", MM)

# (kind, i, j, value): indices resolved against the live objects when applied
OP = st.tuples(st.sampled_from(["create", "x", "y", "xy", "xy", "xy", "next", "delete",
                                "block", "block"]),
               st.integers(0, 20), st.integers(0, 20), st.integers(0, 3))
BLOCK = st.tuples(st.just("block"), st.integers(0, 20), st.integers(0, 20), st.integers(0, 3))
# a transaction of ops, or a frame alone (a block no other change touches: the bulk path)
TRANSACTION = st.one_of(st.tuples(st.lists(OP, max_size=6), st.booleans()),
                        st.tuples(st.lists(BLOCK, min_size=1, max_size=1), st.booleans()))


def apply_op(model: Model, op: tuple) -> None:
    kind, i, j, v = op
    objs = list(model.objects())
    if kind == "create" or not objs:
        model.create("P", x=v, y=(v + i) % 4)
        return
    o, t = objs[i % len(objs)], objs[j % len(objs)]
    if kind == "x":
        model.set(o, "x", v)
    elif kind == "y":
        model.set(o, "y", v)
    elif kind == "xy":  # a frame: both coordinates at once, also through the bulk set
        model.set_many([(o, "x", v), (o, "y", (v * j) % 4)])
    elif kind == "block":  # a frame of several objects: attribute columns, the bulk path
        chosen = list(dict.fromkeys(objs[(i + k) % len(objs)] for k in range(3)))
        xs = [None if v % 2 else (v + k) % 4 for k in range(len(chosen))]  # (y only: in bulk)
        model.set_block(chosen, ["x", "y"], [xs, [(v * j + k) % 4 for k in range(len(chosen))]])
    elif kind == "next":
        model.add(o, "next", t)
    else:
        model.delete(o)


@settings(max_examples=60, deadline=None)
@given(st.lists(OP, max_size=8), st.lists(TRANSACTION, min_size=1, max_size=8))
def test_in_place_and_grouped_updates_equal_naive_reevaluation(setup, transactions):
    check_deltas_equal_reevaluation(MM, QUERIES, apply_op, setup, transactions)


def test_the_gesture_patterns_take_grouped_updates():
    """Both averages of a moved object are updated with one join by the bodies that read
    both (the point of grouping), and separately by the others."""
    model = Model(MM)
    with model.transaction(ts=0):
        a = model.create("P", "a", x=0, y=0)
        b = model.create("P", "b", x=0, y=0)
        model.add(a, "next", b)
    engine = QueryEngine(model, QUERIES)
    with model.transaction(ts=40):
        model.set_many([(a, "x", 3), (a, "y", 3)])
    assert engine.matches("both") == {("a",)}
    assert engine.matches("crossed") == {("a", "b")}
    plans = list(engine._group_plans.values())
    assert plans and all(plan.groups for plan in plans)  # some body took a group


@settings(max_examples=60, deadline=None)
@given(st.lists(TRANSACTION, min_size=1, max_size=10))
def test_history_is_the_moving_average_of_the_committed_values(transactions):
    """Definition (queries/functions.py): an object's average over window w is the mean of
    the last w values of the attribute committed in transactions that set it or created the
    object — one observation per commit, the commit's final value."""
    model = Model(MM)
    history = History(QUERIES.history_sites(), QUERIES.functions, MM)
    history.reset(model)
    model.subscribe(history.apply)
    observed: dict[tuple[str, str], list[int]] = defaultdict(list)

    def observe(commit):
        final: dict[tuple[str, str], int] = {}
        for ch in commit.changes:
            if ch.kind == "create":
                for f in ("x", "y"):
                    observed.pop((ch.obj, f), None)
                    final[(ch.obj, f)] = ch.new[f]
            elif ch.kind == "set":
                final[(ch.obj, ch.feature)] = ch.new
            elif ch.kind == "delete":
                for f in ("x", "y"):
                    observed.pop((ch.obj, f), None)
                    final.pop((ch.obj, f), None)
        for key, value in final.items():
            observed[key].append(value)

    model.subscribe(observe)
    for ts, (ops, abort) in enumerate(transactions):
        run_ops(model, apply_op, ops, ts, abort)
    for site in history.sites:
        (window,) = site.args
        for o in model.instances("P"):
            values = observed[(o.id, site.feature)][-window:]
            assert history.value(site, o.id) == sum(values) / len(values)
