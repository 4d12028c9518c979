"""How pattern sets are split for Spark (pure Python, no Spark needed)."""

from hypothesis import example, given, settings
from hypothesis import strategies as st

from cepflow.loader import load
from cepflow.spark.plan import plan

BASE = """
atomicEvent A(k: Integer, v: Integer)
atomicEvent B(k: Integer)
atomicEvent C(x: Integer, k: Integer)
"""


def test_shared_variable_is_the_key_at_each_types_position() -> None:
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) -> C(_, k) }")
    (g,) = plan(prog)
    assert g.key == {"A": 0, "B": 0, "C": 1} and g.types == {"A", "B", "C"}


def test_no_shared_variable_runs_as_one_partition() -> None:
    prog = load(BASE + "complexEvent P() { as A(k, _) -> B(j) }")
    (g,) = plan(prog)
    assert g.key is None and "cannot be split by key" in g.reason


def test_immediate_needs_the_whole_stream_unless_partitioned() -> None:
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) context immediate }")
    (g,) = plan(prog)
    assert g.key is None and g.types is None and "partition by" in g.reason
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) context immediate "
                       "partition by k }")
    (g,) = plan(prog)
    assert g.key == {"A": 0, "B": 0}


def test_higher_order_patterns_share_a_group_and_its_key() -> None:
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) }\n"
                       "complexEvent Q(k: Integer) { as P(k) -> C(_, k) }\n"
                       "complexEvent R(z: Integer) { as B(z) -> B(z) }")
    groups = plan(prog)
    assert [g.patterns for g in groups] == [["P", "Q"], ["R"]]
    assert groups[0].key == {"A": 0, "B": 0, "P": 0, "C": 1}


def test_rules_go_where_their_trigger_is_detected_once() -> None:
    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) }\n"
                       "complexEvent R(x: Integer) { as C(x, _) -> C(x, _) }\n"
                       "rule r on P, R, B action log\nrule s on A action log\n"
                       "rule t on C action log")
    groups = plan(prog)
    by = {tuple(g.patterns): [(r.name, [x.name for x in r.on]) for r in g.rules]
          for g in groups}
    assert by[("P",)] == [("r", ["P", "B"]), ("s", ["A"])]
    # C is read (and keyed) by R: t goes with R's group, so each C fires it once
    assert by[("R",)] == [("r", ["R"]), ("t", ["C"])]


def test_only_the_actions_the_rules_name_are_shipped() -> None:
    from cepflow.spark.batch import actions_for

    prog = load(BASE + "complexEvent P(k: Integer) { as A(k, _) -> B(k) }\n"
                       "rule r on P action mine.act")
    mine, other = (lambda act: None), (lambda act: None)
    assert actions_for(prog, {"mine.act": mine, "other.act": other}) == {"mine.act": mine}


KEY_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=4))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("AB"), KEY_VALUES), min_size=1, max_size=12))
@example([("A", "\x7f"), ("A", "é"), ("B", "x"), ("A", -0.0), ("A", True), ("A", 1)])
def test_key_column_equals_key_json_per_event(rows) -> None:
    """The column-wise partition keys are the definition (key_json) of each keyed event."""
    from cepflow.events.model import Event
    from cepflow.spark.columns import encode, key_column, key_json

    events = [Event(t, (v,), i) for i, (t, v) in enumerate(rows)]
    batch = encode(events, 1, [None] * len(events), [None] * len(events))
    got = key_column(batch, {"A": 0}).to_pylist()
    assert got == [key_json(e.params[0]) if e.type == "A" else None for e in events]
