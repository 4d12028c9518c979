"""Builder tests: the Python API yields the same AST as the parser for the same patterns."""

from __future__ import annotations

import pytest

from cepflow.language.ast import Atom, Binary, Const, Fol, Name, Or, PatternRef
from cepflow.language.builder import (
    P,
    all_of,
    any_of,
    atomic_event,
    complex_event,
    event,
    module,
    query_event,
    rule,
    seq,
    trait,
    unwrap,
)
from cepflow.language.checker import check
from cepflow.language.parser import parse, parse_pattern
from cepflow.language.printer import format_module

a, b, c, d = (event(n) for n in "abcd")


@pytest.mark.parametrize(
    ("built", "text"),
    [
        (event("A", "x", "_"), "A(x, _)"),
        (event("A"), "A"),
        (event("A", call_args=()), "A()"),
        (event("A", None, "y"), "A(_, y)"),
        (a >> b, "a -> b"),
        (a >> b >> c, "a -> b -> c"),
        (a >> b >> c >> d, "a -> b -> c -> d"),
        (seq(a, b) >> c, "(a -> b) -> c"),
        (a >> (b >> c) >> d, "a -> (b -> c) -> d"),
        (a >> seq(b, c), "a -> b -> c"),
        ("a" >> b, "a -> b"),
        (seq(a, b, c), "a -> b -> c"),
        (seq("a", "b"), "a -> b"),
        (a | b | c, "a OR b OR c"),
        (any_of(a, b, c), "a OR b OR c"),
        (a & b & c, "a AND b AND c"),
        (all_of(a, b, c), "a AND b AND c"),
        (a | (b & c), "a OR (b AND c)"),
        ((a | b) >> c, "(a OR b) -> c"),
        (~a, "NOT a"),
        (~a.times(2).within(ms=10), "NOT a{2}[10]"),
        (a >> ~b >> c, "a -> NOT b -> c"),
        (a.star(), "a{*}"),
        (a.plus() >> b, "a{+} -> b"),
        ((a >> b).times(3), "(a -> b){3}"),
        (a.within(s=3), "a[3 s]"),
        (a.within(s=0.3), "a[0.3 s]"),
        (a.within(min=1, s=30), "a[90 s]"),
        (a.within(h=1), "a within 1 h"),
        (a.within(d=2), "a[2 days]"),
        (a.within(ms=500), "a within 500"),
        (a.holds_for(min=2), "a holds-for 2 min"),
        (a.holds_for(s=2), "a holds_for 2000 ms"),
        (event("M", "m").where("speed > 0"), "M(m) where speed > 0"),
        (
            event("M", "m", where="speed > 0 and name == 'x'"),
            'M(m) where (speed > 0 and name == "x")',
        ),
        (event("M").where(Binary(">", Name("v"), Const(1))) >> b, "M where v > 1 -> b"),
    ],
)
def test_builder_matches_parser(built: P, text: str) -> None:
    assert built == parse_pattern(text)
    assert unwrap(built) == parse_pattern(text)


def test_builder_results_are_plain_nodes_in_declarations() -> None:
    ce = complex_event("C", ["x", ("y", "Integer")], event("A", "x") >> event("B", "y"))
    assert isinstance(ce.body, Fol)
    assert not isinstance(ce.body, P) and not isinstance(ce.body.left, P)
    assert ce == parse("complexEvent C(x : any, y : Integer) { as A(x) -> B(y) }").decls[0]


def test_declarations_match_parsed_module() -> None:
    built = module(
        trait("Side", ("right", "Boolean")),
        atomic_event("A", ("x", "Integer"), traits=["Side"]),
        atomic_event("B", ("x", "Integer")),
        query_event("Q", [("o", "Object")], "q.found", ["o"], change="lost"),
        complex_event(
            "C",
            [("x", "Integer")],
            (event("A", "x", "_").where("x > 0") >> event("B", "x")).within(s=5),
            context="strict",
            partition_by=["x"],
        ),
        rule("r", [event("C", "x"), "B"], "alerts.notify", priority=-1),
        rule("s", "C", None),
        context="chronicle",
        package="demo",
        imports=["demo.model.*"],
        source="demo.vepl",
    )
    text = """package demo
import demo.model.*
context chronicle
trait Side { right : Boolean }
atomicEvent A(x : Integer) with Side
atomicEvent B(x : Integer)
queryEvent Q(o : Object) as q.found(o) lost
complexEvent C(x : Integer) {
  as (A(x, _) where x > 0 -> B(x)) within 5 s
  partition by x
  context strict
}
rule r on C(x), B priority -1 action alerts.notify
rule s on C
"""
    assert built == parse(text, "demo.vepl")
    assert parse(format_module(built), "demo.vepl") == built
    assert [d.message for d in check(built)] == ["rule 's' has no action"]


def test_rule_triggers() -> None:
    r = rule("r", event("A", "x"), "act")
    assert r.on == (PatternRef("A", ("x",)),)
    assert rule("r", PatternRef("A"), "act").on == (PatternRef("A"),)
    assert rule("r", ["A", Atom("B")], "act").on == (PatternRef("A"), PatternRef("B"))


def test_wrapper_equality_and_unwrap() -> None:
    assert a == Atom("a") and a == event("a")
    assert hash(a) == hash(Atom("a"))
    assert unwrap("x") == Atom("x")
    assert unwrap(Or(Atom("a"), Atom("b"))) == Or(Atom("a"), Atom("b"))
    assert "P(" in repr(a)


def test_builder_errors() -> None:
    with pytest.raises(TypeError):
        (a >> b).where("x > 0")
    with pytest.raises(ValueError):
        a.times(-1)
    with pytest.raises(ValueError):
        seq()
    with pytest.raises(ValueError):
        a.within(s=-1)
    with pytest.raises(TypeError):
        unwrap(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        rule("r", a >> b, "act")
    with pytest.raises(ValueError):
        complex_event("C", [], a, context="sometimes")
    with pytest.raises(ValueError):
        query_event("Q", [], "q", change="changed")
