"""Statements that cannot run are rejected when the runner is built, with a clear message."""

from __future__ import annotations

import pytest
from windows_helpers import schema, statement

from cepflow.language import ast
from cepflow.windows import WindowError, WindowRunner, WindowSpec, WindowStatement, parse

SCHEMAS = {"R": schema("R", "k", "v")}
W = WindowSpec.time(10)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"select": ["x"]}, "select item 1: 'x' is not a field of R"),
    ({"select": ["a1.k"]}, "cannot read 'a1.k' .no stream alias"),
    ({"select": ["b.k"], "alias": "a1"}, "cannot read 'b.k' .the stream alias is 'a1'"),
    ({"select": ["count(*)"], "filter": "count(*) > 1"}, "not allowed in the filter"),
    ({"select": ["count(*)"], "group_by": ["sum(v)"]}, "not allowed in group by"),
    ({"select": ["sum(max(v))"]}, "cannot be nested"),
    ({"select": ["sum()"]}, "sum takes one argument, not 0"),
    ({"select": ["count(k, v)"]}, "count takes one argument, not 2"),
    ({"select": ["nosuch(v)"]}, "unknown function 'nosuch'"),
    ({"select": ["k", "k"]}, "k used twice"),
    ({"select": ["sum(current_timestamp())"]}, "cannot be aggregated"),
    ({"select": ["count(*)"], "group_by": ["current_timestamp()"]}, "cannot be a group by"),
    ({"select": ["count(*)"], "filter": "current_timestamp() > 0"}, "not available in the"),
])
def test_invalid_statements(kwargs: dict, message: str) -> None:
    with pytest.raises(WindowError, match=message):
        WindowRunner(statement(window=W, **kwargs), SCHEMAS)


def test_star_outside_count_and_unknown_input() -> None:
    star = WindowStatement("O", "R", W, [ast.Call("sum", (ast.Name("*"),))])
    with pytest.raises(WindowError, match=r"'\*' is only allowed in count\(\*\)"):
        WindowRunner(star, SCHEMAS)
    with pytest.raises(WindowError, match=r"unknown input event type 'Nope' \(known: R"):
        WindowRunner(WindowStatement("O", "Nope", W, [parse("count(*)")]), SCHEMAS)
    with pytest.raises(WindowError, match="select list is empty"):
        WindowStatement("O", "R", W, [])
    with pytest.raises(WindowError, match="per-group window needs group by"):
        WindowStatement("O", "R", WindowSpec.length(2, per_group=True), [parse("count(*)")])


@pytest.mark.parametrize(("make", "message"), [
    (lambda: WindowSpec.time(0), "positive finite"),
    (lambda: WindowSpec.time(float("nan")), "positive finite"),
    (lambda: WindowSpec.length(2.5), "whole number"),
    (lambda: WindowSpec("length", "3"), "must be a number"),
    (lambda: WindowSpec("sliding", 3), "unknown window kind"),
    (lambda: WindowSpec("time", 5, reference_point=3), "reference point applies to"),
    (lambda: WindowSpec("time", 5, per_group=True), "supported for #length"),
    (lambda: WindowSpec("time_batch", 5, per_group=True), "supported for #length"),
])
def test_invalid_windows(make, message: str) -> None:
    with pytest.raises(WindowError, match=message):
        make()


def test_statement_texts_and_output_schema() -> None:
    assert str(WindowSpec.time_batch(86_400_000, 5)) == "#time_batch(86400000, 5)"
    assert str(WindowSpec.time(12.5)) == "#time(12.5)"
    assert str(WindowSpec.length_batch(100, per_group=True)) == \
        "#groupwin(<group by>)#length_batch(100)"
    assert parse("count(*)") == ast.Call("count", ())
    stmt = statement(["k", "count(*)", "avg(v)", "sum(v) * 2"], W, group_by=["k"])
    runner = WindowRunner(stmt, {"R": schema("R", ("k", "str"), ("v", "float"))})
    assert runner.output_schema.param_names == ("k", "count(*)", "avg(v)", "sum(v) * 2")
    assert [p.type for p in runner.output_schema.params] == ["str", "int", "float", "any"]
