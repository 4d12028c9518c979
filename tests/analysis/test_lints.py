"""Every lint on a pattern that has the problem and on one that does not."""

from __future__ import annotations

import pytest

from cepflow.analysis import analyze_set
from cepflow.analysis.patternset import from_text

HEAD = "atomicEvent A(x: Integer, s: String)\natomicEvent B(x: Integer, name: String)\n"


def codes(src: str, epl: bool = False, head: bool = True) -> list[tuple[str, str, int]]:
    pset = from_text((HEAD if head else "") + src, "t.epl" if epl else "t.vepl", epl=epl)
    assert pset.ok, pset.diagnostics
    return [(f.code, f.severity, f.location.line) for f in analyze_set(pset).findings]


def messages(src: str, epl: bool = False, head: bool = True) -> list[str]:
    pset = from_text((HEAD if head else "") + src, "t.epl" if epl else "t.vepl", epl=epl)
    return [f.message + " | fix: " + f.fix for f in analyze_set(pset).findings]


def test_contradiction_makes_a_pattern_never_fire() -> None:
    bad = "complexEvent P(x: Integer) { as (A(x, _) where x > 50 and x < 10 -> B(x, _))[1 s] }"
    good = "complexEvent P(x: Integer) { as (A(x, _) where x > 10 and x < 50 -> B(x, _))[1 s] }"
    assert codes(bad) == [("contradiction", "error", 3)]
    assert codes(good) == []
    assert "can never hold, and every match needs that step" in messages(bad)[0]


def test_contradiction_in_one_alternative_is_a_warning() -> None:
    src = ("complexEvent P(x: Integer) { as (A(x, _) where s == \"a\" and s == \"b\" "
           "OR B(x, _))[1 s] }")
    assert codes(src) == [("contradiction", "warning", 3)]


def test_a_not_that_forbids_nothing() -> None:
    bad = ("complexEvent P(x: Integer) { as (A(x, _) -> NOT B(x, _) where x > 5 and x < 5 "
           "-> A(x, _))[1 s] }")
    good = "complexEvent P(x: Integer) { as (A(x, _) -> NOT B(x, _) -> A(x, _))[1 s] }"
    assert codes(bad) == [("contradiction", "warning", 3)]
    assert "forbids nothing" in messages(bad)[0]
    assert codes(good) == []


def test_type_clash_of_unified_parameters() -> None:
    """``check`` accepts A(x) with x Integer and B(x) with x String: it can never match."""
    bad = "complexEvent P(x: Integer) { as (A(x, _) -> B(_, x))[1 s] }"
    good = "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[1 s] }"
    assert codes(bad) == [("type-clash", "error", 3)]
    assert "A.x (Integer) and B.name (String)" in messages(bad)[0]
    assert codes(good) == []


def test_type_clash_in_an_alternative_is_a_warning() -> None:
    src = "complexEvent P(x: Integer) { as (A(x, _) -> (B(_, x) OR B(x, _)))[1 s] }"
    assert codes(src) == [("type-clash", "warning", 3)]


def test_silence_propagates_to_consumers_and_rules() -> None:
    src = """complexEvent P(x: Integer) { as (A(x, _) where x > 5 and x < 2)[1 s] }
complexEvent Q(x: Integer) { as (P(x) -> B(x, _))[1 s] }
complexEvent S { from q = Q window length(3) select count(*) as n }
rule r on S action some.action
"""
    got = codes(src)
    assert ("needs-silent-type", "error", 4) in got
    assert ("needs-silent-type", "error", 5) in got
    assert ("rule-never-fires", "error", 6) in got
    assert codes("complexEvent P(x: Integer) { as A(x, _) where x > 2 }\n"
                 "complexEvent Q(x: Integer) { as (P(x) -> B(x, _))[1 s] }") == []


def test_a_window_on_one_event() -> None:
    bad = "complexEvent P(x: Integer) { as A(x, _) -> B(x, _)[10 s] }"
    assert ("window-binds-last", "warning", 3) in codes(bad)
    assert "put the window around the whole sequence: (A(x, _) -> B(x, _))[10 s]" in \
        " ".join(messages(bad))
    never = "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _) holds-for 10 s) }"
    assert ("window-binds-last", "error", 3) in codes(never)
    assert not [c for c in codes("complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[10 s] }")
                if c[0] == "window-binds-last"]


EPL_HEAD = "create schema A(x int, s string);\ncreate schema B(x int, name string);\n"


def test_an_epl_guard_that_limits_only_the_end_of_a_sequence() -> None:
    bad = (EPL_HEAD + "@Name('P') insert into P select a.x as x from pattern [every a = A -> "
           "b = B(b.x = a.x) -> c = A(c.x = a.x) where timer:within(5 sec)];")
    good = (EPL_HEAD + "@Name('P') insert into P select a.x as x from pattern [every a = A -> "
            "(b = B(b.x = a.x) -> c = A(c.x = a.x)) where timer:within(5 sec)];")
    found = codes(bad, epl=True, head=False)
    assert ("window-binds-last", "info", 3) in found
    assert "the time runs from the operand before it" in " ".join(
        messages(bad, epl=True, head=False))
    assert not [c for c in codes(good, epl=True, head=False) if c[0] == "window-binds-last"]


def test_partial_matches_that_grow_with_the_stream() -> None:
    bad = "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) }"
    assert codes(bad) == [("unbounded-partial-matches", "warning", 3)]
    assert "under chronicle" in messages(bad)[0]  # (compiler.growth's reason, as check's)
    windowed = "complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[1 min] }"
    assert codes(windowed) == []
    strict = "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) context strict }"
    assert codes(strict) == []
    immediate = "complexEvent P(x: Integer) { as A(x, _) -> B(x, _) context immediate }"
    assert codes(immediate) == []  # noise disposes them (docs/semantics.md, "Resources")


def test_the_next_event_decides_bounds_partial_matches() -> None:
    """Esper's "consecutive" idiom (temperature's Warning): the next A moves or ends it."""
    ok = ("complexEvent W { as every a = A where a.x > 400 -> (b = A where b.x > 400 AND NOT "
          "A where x <= 400) select a.x as x }")
    assert codes(ok) == [("unused-type", "info", 2)]  # (B)
    gap = ("complexEvent W { as every a = A where a.x > 400 -> (b = A where b.x > 400 AND NOT "
           "A where x < 300) select a.x as x }")
    assert codes(gap) == [("unbounded-partial-matches", "warning", 3),
                          ("unused-type", "info", 2)]


def test_every_distinct_without_expiry() -> None:
    bad = ("complexEvent W { as (every-distinct(a.x) a = A -> b = B where b.x == a.x)[1 s] "
           "select a.x as x }")
    good = ("complexEvent W { as (every-distinct(a.x; 1 d) a = A -> b = B where b.x == a.x)"
            "[1 s] select a.x as x }")
    assert codes(bad) == [("unbounded-partial-matches", "warning", 3)]
    assert codes(good) == []


def test_unused_input_types() -> None:
    assert codes("complexEvent P(x: Integer) { as A(x, _) }") == [("unused-type", "info", 2)]
    assert codes("complexEvent P(x: Integer) { as (A(x, _) -> B(x, _))[1 s] }") == []


@pytest.mark.parametrize("src", [
    "complexEvent P(x: Integer) { as A(x, _) where x > 1 }",
    "complexEvent P { from a = A window time(1 min) select count(*) as n }",
])
def test_clean_sets_have_no_finding(src: str) -> None:
    assert [c for c in codes(src) if c[0] != "unused-type"] == []


def test_priority_inversion() -> None:
    bad = ("complexEvent P(x: Integer) { as A(x, _) priority 1 }\n"
           "complexEvent Q(x: Integer) { as (P(x) -> B(x, _))[1 s] priority 5 }")
    assert ("priority-inversion", "warning", 4) in codes(bad)
    good = bad.replace("priority 5", "priority 0")
    assert [c for c in codes(good) if c[0] == "priority-inversion"] == []
