"""The metamodel text format: a Lark grammar (``metamodel.lark``) onto :class:`MetamodelBuilder`.

Syntax errors and metamodel errors (unknown supertype, duplicate feature …) are reported as
:class:`~cepflow.models.metamodel.MetamodelError` located at ``FILE:LINE:COL``.
"""

from __future__ import annotations

from pathlib import Path

from lark import Token, Tree

from cepflow.language.diagnostics import Diagnostic
from cepflow.language.limits import LimitError, whole_number
from cepflow.language.syntax import LarkErrors, lark_parser, literal, node_loc, parse_located
from cepflow.models.metamodel import MANY, Metamodel, MetamodelBuilder, MetamodelError

_NAMES = {"INT": "integer"}


_GRAMMAR = Path(__file__).with_name("metamodel.lark")


def parse_metamodel(text: str, source: str = "<string>") -> Metamodel:
    """Parse the text format; raise MetamodelError with every located problem."""
    try:
        tree = parse_located(lark_parser(_GRAMMAR, maybe_placeholders=False), text, source, _NAMES)
        name = tree.children[0]
        builder = MetamodelBuilder(str(name), source)
        for decl in tree.children[1:]:
            _class(builder, decl, source)
    except LarkErrors as e:
        raise MetamodelError([e.diagnostic]) from None
    return builder.build()


def _class(builder: MetamodelBuilder, decl: Tree, source: str) -> None:
    parts = list(decl.children)
    abstract = bool(parts) and isinstance(parts[0], Token) and parts[0].type == "ABSTRACT"
    if abstract:
        parts.pop(0)
    name = parts.pop(0)
    supers: list[str] = []
    if parts and isinstance(parts[0], Tree) and parts[0].data == "supertypes":
        supers = [str(t) for t in parts.pop(0).children]
    cb = builder.add_class(str(name), supers, abstract=abstract, loc=node_loc(name))
    for member in parts:
        fname, ftype, *rest = member.children
        loc = node_loc(fname)
        if member.data == "attr_decl":
            cb.attr(str(fname), str(ftype), literal(rest[0], source) if rest else None, loc=loc)
            continue
        lower, upper, contains = 0, 1, False
        for item in rest:
            if isinstance(item, Token):
                contains = True
            else:
                lower, upper = _multiplicity(item, source)
        cb.ref(str(fname), str(ftype), lower, upper, contains=contains, loc=loc)


def _multiplicity(node: Tree, source: str) -> tuple[int, int]:
    bounds = [MANY if b.type == "STAR" else _bound(b, source) for b in node.children]
    if node.data == "exact":
        return (0, MANY) if bounds[0] == MANY else (bounds[0], bounds[0])
    return bounds[0], bounds[1]


def _bound(t: Token, source: str) -> int:
    """A multiplicity bound (digits only): at most 64 bits (docs/language.md, Limits)."""
    try:
        return whole_number(str(t), "a multiplicity bound") or 0
    except LimitError as e:
        line, col = node_loc(t)
        raise LarkErrors(Diagnostic(source, line, col, str(e))) from None
