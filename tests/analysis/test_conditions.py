"""Interval and equality reasoning over conditions (compiler/conditions.py)."""

from __future__ import annotations

import pytest

from cepflow.compiler.conditions import constants, satisfiable
from cepflow.language.parser import parse_expr


def sat(text: str, **types: str) -> bool:
    return satisfiable(parse_expr(text), types)


@pytest.mark.parametrize("text", [
    "speed > 50 and speed < 10",
    "speed >= 50 and speed == 0",
    "x == 1 and x == 2",
    "x == 1 and x != 1",
    "x > 5 and not x > 3",
    "name == \"a\" and name == \"b\"",
    "flag == true and flag == false",
    "x == null and x > 1",
    "x > y and x <= y",
    "x > y and y > x",
    "f(x) and not f(x)",
    "(a > 1 or b > 1) and a < 0 and b < 0",
    "x > x",
    "1 > 2",
    "not (x > 5) and x > 7",  # x > 7 needs a value, and then x <= 5 contradicts it
])
def test_contradictions_are_found(text: str) -> None:
    assert not sat(text)


@pytest.mark.parametrize("text", [
    "speed > 10 and speed < 50",
    "x == 1 or x == 2",
    "x != 1 and x != 2",
    "x > y and x < z",
    "f(x) and g(x)",
    "a > 1 or a < 0",
    "x >= 5 and x <= 5",
])
def test_satisfiable_conditions_stay(text: str) -> None:
    assert sat(text)


def test_integers_have_no_value_between_neighbours() -> None:
    assert sat("x > 5 and x < 6")
    assert not sat("x > 5 and x < 6", x="int")
    assert not sat("x == 2.5", x="int")
    assert sat("x >= 5 and x < 6", x="int")


def test_negated_ordering_admits_null_unless_values_are_assumed() -> None:
    cover = parse_expr("not (t > 400 or t <= 400)")
    assert satisfiable(cover)  # a null t satisfies neither comparison
    assert not satisfiable(cover, nulls=False)


def test_bool_fields() -> None:
    assert not sat("seat and not seat", seat="bool")
    assert sat("seat or not seat", seat="bool")


def test_too_large_forms_are_satisfiable() -> None:
    text = " and ".join(f"(a{i} > 1 or a{i} < 0)" for i in range(12)) + " and 1 > 2"
    assert sat(text)  # 4096 conjunctions: not expanded, so unknown (never a false proof)


def test_constants_per_term() -> None:
    got = constants(parse_expr("speed > 50 and (tire1 < 1.2 or 2.0 < tire1) and id == \"x\""))
    assert got == {"speed": {50}, "tire1": {1.2, 2.0}, "id": {"x"}}
