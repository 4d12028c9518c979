"""How pattern sets are split for Spark (pure Python, no Spark needed)."""

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
