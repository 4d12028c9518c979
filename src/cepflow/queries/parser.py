"""Parse graph query files (grammar in ``grammar.lark``) into :mod:`cepflow.queries.ast`.

Syntax errors raise :class:`QueryError` located at ``FILE:LINE:COL``; names and types are
checked against a metamodel afterwards by :mod:`cepflow.queries.compiler`.
"""

from __future__ import annotations

from pathlib import Path

from lark import Token, Tree

from cepflow.language import ast as E
from cepflow.language.diagnostics import DiagnosticError
from cepflow.language.syntax import LarkErrors, lark_parser, literal, node_loc, parse_located
from cepflow.queries import ast as Q

_NAMES = {"NAME": "name", "SIGNED_NUMBER": "number", "STRING": "string",
          "EQ_OP": "'==' or '!='", "COMP_OP": "'<', '<=', '>' or '>='", "ADD_OP": "'+' or '-'",
          "MUL_OP": "'*', '/' or '%'"}


class QueryError(DiagnosticError):
    """Errors in a query file (syntax, names, types), each at ``FILE:LINE:COL``."""


_GRAMMAR = Path(__file__).with_name("grammar.lark")


def parse_queries(text: str, source: str = "<string>") -> Q.QueryFile:
    """Parse a query file; raise QueryError at the first syntax error."""
    try:
        tree = parse_located(lark_parser(_GRAMMAR, maybe_placeholders=True), text, source, _NAMES)
    except LarkErrors as e:
        raise QueryError([e.diagnostic]) from None
    return Q.QueryFile(tuple(_pattern(p) for p in tree.children), source)


def _pattern(node: Tree) -> Q.PatternDecl:
    private, name, *rest = node.children
    params: list[Q.Param] = []
    bodies: list[Q.Body] = []
    for child in rest:
        if child is None:
            continue
        if child.data == "param":
            pname, ptype = child.children
            params.append(Q.Param(str(pname), None if ptype is None else str(ptype),
                                  node_loc(pname)))
        else:
            bodies.append(Q.Body(tuple(_constraint(c) for c in child.children), node_loc(child)))
    return Q.PatternDecl(str(name), tuple(params), tuple(bodies), private is not None,
                         node_loc(name))


def _constraint(node: Tree) -> Q.Constraint:
    kind, ch, loc = node.data, node.children, node_loc(node)
    if kind == "type_constraint":
        return Q.TypeConstraint(str(ch[0]), _term(ch[1]), loc)
    if kind == "path_constraint":
        return Q.PathConstraint(str(ch[0]), str(ch[1]), _term(ch[2]), _term(ch[3]), loc,
                                node_loc(ch[1]))
    if kind in ("find", "neg_find"):
        negative = kind == "neg_find"
        name, *args = ch[1:] if negative else ch
        terms = tuple(_term(a) for a in args if a is not None)
        return Q.FindConstraint(str(name), terms, negative, loc)
    if kind == "check":
        return Q.CheckConstraint(_expr(ch[0]), loc)
    assert kind == "compare", kind
    return Q.CompareConstraint(str(ch[1]), _term(ch[0]), _term(ch[2]), loc)  # type: ignore[arg-type]


def _term(node: Tree) -> Q.Term:
    if node.data == "var":
        return Q.Var(str(node.children[0]), node_loc(node))
    return Q.Literal_(literal(node), node_loc(node))




_BINARY = {"or_expr": "or", "and_expr": "and"}


def _expr(node: Tree | Token) -> E.Expr:
    """The cepflow expression AST for a parse tree of a check condition."""
    assert isinstance(node, Tree)
    kind, ch, loc = node.data, node.children, node_loc(node)
    if kind in ("number", "string", "true", "false"):
        return E.Const(literal(node), loc)
    if kind == "name":
        return E.Name(str(ch[0]), loc=loc)
    if kind == "call":
        return E.Call(str(ch[0]), tuple(_expr(a) for a in ch[1:] if a is not None), loc)
    if kind == "not_op":
        return E.Unary("not", _expr(ch[0]), loc)
    if kind == "negate":
        inner = _expr(ch[0])
        if isinstance(inner, E.Const) and isinstance(inner.value, int | float) \
                and not isinstance(inner.value, bool):
            return E.Const(-inner.value, loc)
        return E.Unary("-", inner, loc)
    if kind in _BINARY:
        result = _expr(ch[0])
        for operand in ch[1:]:
            result = E.Binary(_BINARY[kind], result, _expr(operand), loc)
        return result
    # comparison, sum, product: operand (OP operand)*
    result = _expr(ch[0])
    for i in range(1, len(ch), 2):
        result = E.Binary(str(ch[i]), result, _expr(ch[i + 1]), node_loc(ch[i]))
    return result
