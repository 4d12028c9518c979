"""Pattern and statement priorities: the language (both syntaxes, printer, checker, builder)
and the engine's order (patterns that take one event run in priority order)."""

from __future__ import annotations

import cepflow
from cepflow.events.event import Event
from cepflow.language import ast, builder
from cepflow.language.checker import check
from cepflow.language.epl import parse_epl
from cepflow.language.parser import parse
from cepflow.language.printer import format_module
from cepflow.runtime.engine import run_patterns

SRC = """atomicEvent T(k: Integer, v: Integer)
complexEvent P(k: Integer) { as T(k, _) where v > 5 }
complexEvent Q(k: Integer) { as T(k, _) where v < 10 }
complexEvent C(k: Integer) { as Q(k) -> P(k) }
"""


def test_priority_in_cepflow_syntax_round_trips() -> None:
    m = parse("atomicEvent A(x: Integer)\n"
              "complexEvent P(x: Integer) { as A(x) priority 3 context chronicle }\n"
              "complexEvent S { from a = A window length(2) select count(*) as n "
              "priority -2 }\n")
    assert [getattr(d, "priority", None) for d in m.decls] == [None, 3, -2]
    text = format_module(m)
    assert "\tpriority 3\n" in text and "\tpriority -2\n" in text
    assert parse(text) == m


def test_priority_given_twice_is_an_error() -> None:
    import pytest

    from cepflow.language.diagnostics import PatternSyntaxError

    with pytest.raises(PatternSyntaxError, match="'priority' given twice"):
        parse("atomicEvent A\ncomplexEvent P { as A priority 1 priority 2 }\n")


def test_epl_priority_annotation() -> None:
    m = parse_epl("create schema A(x int);\n"
                  "@Priority(5) @Name('P') insert into P select a.x as x from pattern "
                  "[every a = A];\n"
                  "@Priority(-1) insert into S select count(*) as n from A.win:length(3);\n")
    assert [getattr(d, "priority", None) for d in m.decls] == [None, 5, -1]


def test_checker_refuses_a_priority_that_is_not_a_whole_number() -> None:
    m = parse("atomicEvent A\ncomplexEvent P { as A }\n")
    bad = ast.Module((m.decls[0], ast.ComplexEventDecl("P", (), ast.Atom("A"), priority=1.5)))
    assert any("must be a whole number" in d.message for d in check(bad))
    assert builder.complex_event("P", [], "A", priority=2).priority == 2


def test_priorities_order_the_patterns_that_take_one_event() -> None:
    """P and Q complete on the same T: without priorities P (declared first) emits first and
    C (Q -> P) misses the pair; with Q above P, C has it."""
    stream = [Event("T", (1, 7), 0)]
    assert [c.type for c in run_patterns(cepflow.load(SRC), stream)] == ["P", "Q"]
    fixed = SRC.replace("where v < 10 }", "where v < 10 priority 1 }")
    assert [c.type for c in run_patterns(cepflow.load(fixed), stream)] == ["Q", "P", "C"]


def test_a_consumer_above_its_producer_still_receives_its_events() -> None:
    inverted = SRC.replace("as Q(k) -> P(k) }", "as Q(k) -> P(k) priority 9 }").replace(
        "where v < 10 }", "where v < 10 priority 1 }")
    program = cepflow.load(inverted)
    assert program.automata[0].name == "C"  # priority first
    out = run_patterns(program, [Event("T", (1, 7), 0)])
    assert [c.type for c in out] == ["Q", "P", "C"]
