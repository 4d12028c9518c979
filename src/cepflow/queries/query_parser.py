"""Parse graph query files (grammar in ``grammar.lark``) into :mod:`cepflow.queries.query_ast`.

Syntax errors raise :class:`QueryError` located at ``FILE:LINE:COL``; names and types are
checked against a metamodel afterwards by :mod:`cepflow.queries.compiler`.
"""

from __future__ import annotations

from pathlib import Path

from lark import Token, Tree

from cepflow.language import ast as E
from cepflow.language.diagnostics import Diagnostic, DiagnosticError
from cepflow.language.limits import MAX_NESTING, too_deep
from cepflow.language.syntax import (
    LarkErrors,
    check_depth,
    lark_parser,
    literal,
    node_loc,
    parse_located,
)
from cepflow.queries import query_ast as Q

_NAMES = {"EQ_OP": "'==' or '!='", "COMP_OP": "'<', '<=', '>' or '>='", "ADD_OP": "'+' or '-'",
          "MUL_OP": "'*', '/' or '%'"}


class QueryError(DiagnosticError):
    """Errors in a query file (syntax, names, types), each at ``FILE:LINE:COL``."""


_GRAMMAR = Path(__file__).with_name("grammar.lark")


def parse_queries(text: str, source: str = "<string>") -> Q.QueryFile:
    """Parse a query file; raise QueryError at the first syntax error."""
    try:
        tree = parse_located(lark_parser(_GRAMMAR, maybe_placeholders=True), text, source, _NAMES)
        return Q.QueryFile(tuple(_pattern(p, source) for p in tree.children), source)
    except LarkErrors as e:
        raise QueryError([e.diagnostic]) from None


def _pattern(node: Tree, source: str) -> Q.PatternDecl:
    private, name, *rest = node.children
    params: list[Q.QueryParam] = []
    bodies: list[Q.Body] = []
    for child in rest:
        if child is None:
            continue
        if child.data == "param":
            pname, ptype = child.children
            params.append(Q.QueryParam(str(pname), None if ptype is None else str(ptype),
                                  node_loc(pname)))
        else:
            bodies.append(Q.Body(tuple(_constraint(c, source) for c in child.children),
                                 node_loc(child)))
    return Q.PatternDecl(str(name), tuple(params), tuple(bodies), private is not None,
                         node_loc(name))


def _constraint(node: Tree, source: str) -> Q.Constraint:
    kind, ch, loc = node.data, node.children, node_loc(node)
    if kind == "type_constraint":
        return Q.TypeConstraint(str(ch[0]), _term(ch[1], source), loc)
    if kind == "path_constraint":
        return Q.PathConstraint(str(ch[0]), str(ch[1]), _term(ch[2], source),
                                _term(ch[3], source), loc, node_loc(ch[1]))
    if kind in ("find", "neg_find"):
        negative = kind == "neg_find"
        name, *args = ch[1:] if negative else ch
        terms = tuple(_term(a, source) for a in args if a is not None)
        return Q.FindConstraint(str(name), terms, negative, loc)
    if kind == "check":
        return Q.CheckConstraint(_condition(ch[0], source), loc)
    assert kind == "compare", kind
    return Q.CompareConstraint(str(ch[1]), _term(ch[0], source), _term(ch[2], source),  # type: ignore[arg-type]
                               loc)


def _term(node: Tree, source: str) -> Q.Term:
    if node.data == "var":
        return Q.Var(str(node.children[0]), node_loc(node))
    return Q.Literal_(literal(node, source), node_loc(node))


def _condition(node: Tree, source: str) -> E.Expr:
    """A check condition, nested at most limits.MAX_NESTING deep (in its parse tree, which
    :func:`_expr` walks recursively, and in the expression it becomes)."""
    check_depth(node, source, MAX_NESTING, "condition")
    expr = _expr(node, source)
    found = too_deep([], [expr])
    if found is not None:
        line, col = found[0] or node_loc(node)
        raise LarkErrors(Diagnostic(source, line, col, found[1]))
    return expr


_BINARY = {"or_expr": "or", "and_expr": "and"}


def _expr(node: Tree | Token, source: str) -> E.Expr:
    """The cepflow expression AST for a parse tree of a check condition."""
    assert isinstance(node, Tree)
    kind, ch, loc = node.data, node.children, node_loc(node)
    if kind in ("number", "string", "true", "false"):
        return E.Const(literal(node, source), loc)
    if kind == "name":
        return E.Name(str(ch[0]), loc=loc)
    if kind == "call":
        return E.Call(str(ch[0]), tuple(_expr(a, source) for a in ch[1:] if a is not None), loc)
    if kind == "not_op":
        return E.Unary("not", _expr(ch[0], source), loc)
    if kind == "negate":
        inner = _expr(ch[0], source)
        if isinstance(inner, E.Const) and isinstance(inner.value, int | float) \
                and not isinstance(inner.value, bool):
            return E.Const(-inner.value, loc)
        return E.Unary("-", inner, loc)
    if kind in _BINARY:
        result = _expr(ch[0], source)
        for operand in ch[1:]:
            result = E.Binary(_BINARY[kind], result, _expr(operand, source), loc)
        return result
    # comparison, sum, product: operand (OP operand)*
    result = _expr(ch[0], source)
    for i in range(1, len(ch), 2):
        result = E.Binary(str(ch[i]), result, _expr(ch[i + 1], source), node_loc(ch[i]))
    return result
