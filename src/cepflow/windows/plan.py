"""Compiling a :class:`WindowStatement` against the event schemas into an executable plan.

The plan decides, as Esper's result-set processor factory does (docs/windows.md, "Query
kinds"), whether the statement outputs **one row per group** (every field the select list and
``having`` read outside aggregates appears in a ``group by`` expression; without ``group by``,
no such field at all: Esper's *fully aggregated* queries, one row for the whole window) or
**one row per event** (Esper's *un-aggregated* and *aggregated, not fully grouped* queries).
It compiles filter, group-by keys, aggregate arguments, select items and ``having`` with
cepflow's own evaluator: aggregates become placeholder names bound to their current values.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from cepflow.compiler.evaluator import Evaluator, ExpressionError, compile_expr
from cepflow.events.event import Event, EventType, ParamSpec
from cepflow.language import ast
from cepflow.language.printer import format_expr
from cepflow.language.walk import expr_children as children
from cepflow.language.walk import rewrite, strip_alias
from cepflow.windows.aggregates import AggregateSlot
from cepflow.windows.expressions import (
    AGGREGATES,
    NOW,
    aggregates_in,
    bind_current_timestamp,
    default_alias,
    is_aggregate,
    is_star,
    names_in,
    names_outside_aggregates,
)
from cepflow.windows.held import Record
from cepflow.windows.output_rows import RowBuilder, placeholder, placeholder_slot, tuple_getter
from cepflow.windows.statement import WindowError, WindowStatement

Mode = Literal["group", "event"]
KeyFn = Callable[[Event], Any]
_NO_BINDINGS: dict[str, Any] = {}


@dataclass
class StatementPlan:
    """Everything a runner needs to execute one statement."""

    statement: WindowStatement
    mode: Mode
    fields: dict[str, int]
    filter: Evaluator | None
    key: KeyFn
    group_exprs: tuple[ast.Expr, ...]
    args: tuple[ast.Expr, ...]
    arg_fns: tuple[Evaluator, ...]
    #: the group key and the aggregate arguments read straight from ``event.params`` when
    #: they are plain fields (an ``itemgetter``), else None (use ``key`` / ``arg_fns``)
    key_from_params: Callable[[tuple[Any, ...]], Any] | None
    args_from_params: Callable[[tuple[Any, ...]], tuple[Any, ...]] | None
    slots: tuple[AggregateSlot, ...]
    select: tuple[ast.Expr, ...]
    #: per select item how a row reads it: ("agg", slot), ("field", index), ("now", None)
    #: or ("expr", evaluator)
    items: tuple[tuple[str, Any], ...]
    aliases: tuple[str, ...]
    output_schema: EventType
    row_builder: Callable[[Callable[[], int]], RowBuilder]
    #: ``having`` as the row builder evaluates it (aggregates as their placeholder names,
    #: ``current_timestamp()`` as NOW), for the column-wise plans (kernels.window_block)
    having_expr: ast.Expr | None = None

    def record(self, event: Event, seq: int, ts: float | None = None) -> Record:
        """The record a window keeps for an accepted ``event`` (``cepflow.windows.held``):
        its group key and aggregate arguments evaluated now; ``ts`` defaults to the event's."""
        params = event.params
        kp, ap = self.key_from_params, self.args_from_params
        return (event.ts if ts is None else ts, seq,
                kp(params) if kp is not None else self.key(event),
                ap(params) if ap is not None else
                tuple([f(event, _NO_BINDINGS) for f in self.arg_fns]), event)


def _walk(expr: ast.Expr) -> Iterator[ast.Expr]:
    """Every node of ``expr`` (the ``*`` of ``count(*)`` excepted)."""
    yield expr
    if isinstance(expr, ast.Call) and expr.func == "count" and len(expr.args) == 1 \
            and is_star(expr.args[0]):
        return
    for c in children(expr):
        yield from _walk(c)


def _check_names(expr: ast.Expr, fields: Mapping[str, int], where: str,
                 stmt: WindowStatement) -> None:
    for e in _walk(expr):
        if isinstance(e, ast.Name) and not is_star(e) and e.name != NOW:
            if e.path:
                dotted = ".".join((e.name, *e.path))
                hint = (f" (the stream alias is '{stmt.alias}')" if stmt.alias
                        else " (no stream alias is declared)")
                raise WindowError(f"statement '{stmt.name}': {where}: cannot read '{dotted}'"
                                  f"{hint}", e.loc or stmt.loc)
            if e.name not in fields:
                known = ", ".join(fields) or "none"
                raise WindowError(f"statement '{stmt.name}': {where}: '{e.name}' is not a "
                                  f"field of {stmt.input_type} (fields: {known})",
                                  e.loc or stmt.loc)
        if isinstance(e, ast.Call) and e.func in AGGREGATES and not is_aggregate(e):
            if e.func in ("count", "sum", "avg"):
                raise WindowError(f"statement '{stmt.name}': {where}: {e.func} takes one "
                                  f"argument, not {len(e.args)}", e.loc or stmt.loc)
            if not e.args:
                raise WindowError(f"statement '{stmt.name}': {where}: {e.func} needs an "
                                  "argument", e.loc or stmt.loc)
        if is_star(e):
            raise WindowError(f"statement '{stmt.name}': {where}: '*' is only allowed in "
                              "count(*)", e.loc or stmt.loc)


def _no_aggregates(expr: ast.Expr | None, where: str, stmt: WindowStatement) -> None:
    if expr is not None and aggregates_in(expr):
        raise WindowError(f"statement '{stmt.name}': aggregate functions are not allowed in "
                          f"{where}", aggregates_in(expr)[0].loc or stmt.loc)


def _compile(expr: ast.Expr, fields: Mapping[str, int],
             functions: Mapping[str, Callable[..., Any]] | None,
             variables: frozenset[str], stmt: WindowStatement, where: str,
             original: ast.Expr | None = None) -> Evaluator:
    """``expr`` compiled; failures name the statement, ``where`` in it and the
    ``original`` expression's text (before aliases and aggregates were rewritten)."""
    try:
        return compile_expr(expr, fields, functions, variables,
                            origin=f"statement {stmt.name}, {where}",
                            text=format_expr(original if original is not None else expr))
    except ExpressionError as e:
        raise WindowError(f"statement '{stmt.name}': {where}: {e}", e.loc or stmt.loc) from None


def _key_fn(fns: list[Evaluator]) -> KeyFn:
    if not fns:
        return lambda ev: ()
    if len(fns) == 1:
        f = fns[0]
        return lambda ev: f(ev, _NO_BINDINGS)
    return lambda ev: tuple([f(ev, _NO_BINDINGS) for f in fns])


def _output_type(expr: ast.Expr, slots: list[AggregateSlot], schema: EventType) -> str:
    slot = placeholder_slot(expr.name) if isinstance(expr, ast.Name) else None
    if slot is not None:
        return {"count": "int", "avg": "float"}.get(slots[slot].func, "any")
    if isinstance(expr, ast.Name) and expr.name in schema.param_names:
        return schema.params[schema.index_of(expr.name)].type
    return "any"


def compile_statement(
    stmt: WindowStatement,
    schemas: Mapping[str, EventType],
    functions: Mapping[str, Callable[..., Any]] | None = None,
) -> StatementPlan:
    """Validate ``stmt`` against the input type's schema and compile every expression."""
    if stmt.input_type not in schemas:
        known = ", ".join(sorted(schemas)) or "none"
        raise WindowError(f"statement '{stmt.name}': unknown input event type "
                          f"'{stmt.input_type}' (known: {known})", stmt.loc)
    schema = schemas[stmt.input_type]
    fields = {n: i for i, n in enumerate(schema.param_names)}
    for other in stmt.more_inputs:  # a union reads every type by the first one's fields
        if other not in schemas:
            raise WindowError(f"statement '{stmt.name}': unknown input event type '{other}'",
                              stmt.loc)
        if schemas[other].param_names != schema.param_names:
            raise WindowError(
                f"statement '{stmt.name}': the types it reads as one stream need the same "
                f"fields in the same order: {stmt.input_type}"
                f"({', '.join(schema.param_names)}), {other}"
                f"({', '.join(schemas[other].param_names)})", stmt.loc)

    def prep(e: ast.Expr) -> ast.Expr:
        return bind_current_timestamp(strip_alias(e, stmt.alias))

    select = tuple(prep(i.expr) for i in stmt.select)
    group_exprs = tuple(prep(g) for g in stmt.group_by)
    having = prep(stmt.having) if stmt.having is not None else None
    filt = prep(stmt.filter) if stmt.filter is not None else None
    for where, e in [*((f"select item {i + 1}", s) for i, s in enumerate(select)),
                     *((f"group by {i + 1}", g) for i, g in enumerate(group_exprs)),
                     ("having", having), ("filter", filt)]:
        if e is not None:
            _check_names(e, fields, where, stmt)
    _no_aggregates(filt, "the filter", stmt)
    for g in group_exprs:
        _no_aggregates(g, "group by", stmt)
        if NOW in names_in(g):
            raise WindowError(f"statement '{stmt.name}': current_timestamp() cannot be a "
                              "group by expression", g.loc or stmt.loc)
    if filt is not None and NOW in names_in(filt):
        raise WindowError(f"statement '{stmt.name}': current_timestamp() is not available "
                          "in the filter", filt.loc or stmt.loc)

    # aggregate slots: one per distinct (function, argument); arguments shared by functions
    slots: list[AggregateSlot] = []
    args: list[ast.Expr] = []
    slot_of: dict[tuple[str, ast.Expr | None], int] = {}
    for e in (*select, *((having,) if having is not None else ())):
        for call in aggregates_in(e):
            arg = None if not call.args or is_star(call.args[0]) else call.args[0]
            if arg is not None:
                if aggregates_in(arg):
                    raise WindowError(f"statement '{stmt.name}': aggregate functions cannot "
                                      "be nested", call.loc or stmt.loc)
                if NOW in names_in(arg):
                    raise WindowError(f"statement '{stmt.name}': current_timestamp() cannot "
                                      "be aggregated", call.loc or stmt.loc)
            if (call.func, arg) in slot_of:
                continue
            if arg is not None and arg not in args:
                args.append(arg)
            slot_of[(call.func, arg)] = len(slots)
            slots.append(AggregateSlot(call.func, arg, args.index(arg) if arg is not None
                                       else -1))

    def replace_aggregates(e: ast.Expr) -> ast.Expr:
        def fn(node: ast.Expr) -> ast.Expr | None:
            if is_aggregate(node):
                assert isinstance(node, ast.Call)
                arg = None if not node.args or is_star(node.args[0]) else node.args[0]
                return ast.Name(placeholder(slot_of[(node.func, arg)]), (), node.loc)
            return None
        return rewrite(e, fn)

    # query kind (Esper's result-set processor choice)
    outside: set[str] = set()
    for e in (*select, *((having,) if having is not None else ())):
        outside |= names_outside_aggregates(e)
    outside.discard(NOW)
    has_aggregates = bool(slots)
    if group_exprs:
        grouped: set[str] = set()
        for g in group_exprs:
            grouped |= names_in(g)
        mode: Mode = "group" if outside <= grouped else "event"
    else:
        mode = "group" if has_aggregates and not outside else "event"

    aliases = tuple(i.alias or default_alias(i.expr) for i in stmt.select)
    dup = {a for a in aliases if aliases.count(a) > 1}
    if dup:
        raise WindowError(f"statement '{stmt.name}': output names must differ; "
                          f"{', '.join(sorted(dup))} used twice (give the items aliases)",
                          stmt.loc)
    placeholders = frozenset({*(placeholder(i) for i in range(len(slots))), NOW})
    compiled_items: list[tuple[str, Any]] = []
    rewritten = [replace_aggregates(e) for e in select]
    for i, e in enumerate(rewritten):
        slot = placeholder_slot(e.name) if isinstance(e, ast.Name) else None
        if slot is not None:
            compiled_items.append(("agg", slot))
        elif isinstance(e, ast.Name) and e.name == NOW:
            compiled_items.append(("now", None))
        elif isinstance(e, ast.Name) and e.name in fields:
            compiled_items.append(("field", fields[e.name]))
        else:
            compiled_items.append(("expr", _compile(e, fields, functions, placeholders, stmt,
                                                    f"select item {i + 1}",
                                                    stmt.select[i].expr)))
    having_expr = replace_aggregates(having) if having is not None else None
    having_fn = (_compile(having_expr, fields, functions, placeholders, stmt, "having",
                          stmt.having) if having_expr is not None else None)
    filter_fn = (_compile(filt, fields, functions, frozenset(), stmt, "filter", stmt.filter)
                 if filt is not None else None)
    key = _key_fn([_compile(g, fields, functions, frozenset(), stmt, f"group by {i + 1}",
                            stmt.group_by[i])
                   for i, g in enumerate(group_exprs)])
    arg_fns = tuple(_compile(a, fields, functions, frozenset(), stmt, "aggregate argument")
                    for a in args)
    output_schema = EventType(stmt.name, tuple(
        ParamSpec(a, _output_type(e, slots, schema)) for a, e in zip(aliases, rewritten,
                                                                     strict=True)))

    def row_builder(match_ids: Callable[[], int]) -> RowBuilder:
        return RowBuilder(stmt.name, aliases, compiled_items, having_fn, len(slots), match_ids)

    key_params: Callable[[tuple[Any, ...]], Any] | None = None
    if group_exprs and all(_is_field(g, fields) for g in group_exprs):
        idx = [fields[g.name] for g in group_exprs]  # type: ignore[union-attr]
        key_params = operator.itemgetter(*idx)  # one index: the value; several: a tuple
    args_params = (tuple_getter([fields[a.name] for a in args])  # type: ignore[union-attr]
                   if args and all(_is_field(a, fields) for a in args) else None)
    return StatementPlan(stmt, mode, fields, filter_fn, key, group_exprs, tuple(args), arg_fns,
                         key_params, args_params, tuple(slots), select,
                         tuple(compiled_items), aliases, output_schema, row_builder,
                         having_expr)


def _is_field(e: ast.Expr, fields: Mapping[str, int]) -> bool:
    return isinstance(e, ast.Name) and not e.path and e.name in fields
