"""Esper's tags inside a repetition: arrays of events, read as ``a[0].id``, ``a[1].id``.

A tag on an event inside ``[n] …`` or inside the repeated operand of ``… until …`` (Esper's
"Tags and the Repeat Operator") names every event the repetition collects, in arrival order.
The rules, from the Esper reference, with cepflow's decisions where it is silent (docs/esper.md):

* inside its repetition the plain tag is the current repetition's event: ``[2] (a=A ->
  b=B(id = a.id))``; the indexed form there is invalid (Esper: "you may not use indexed tags
  defined in the sub-expression to the repeat operator in the same subexpression");
* after its repetition — in later filters, the select list, every-distinct keys — the tag is an
  array: ``a[k].field`` is the field of the k-th (from 0) collected event, null when fewer were
  collected. **Decision:** ``a.field`` there is an error (an array has no field), and so are
  ``a`` and ``a[k]`` without a field (cepflow selects fields, not whole events);
* an index on a tag that is not repeated is an error.

An indexed name is an :class:`~cepflow.language.ast.Name` whose head is ``"a[3]"``
(:func:`indexed`), so the expression evaluator reads ``a[3].id`` like any other variable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from cepflow.language import ast
from cepflow.language.walk import atoms, names, pattern_children

_INDEXED = re.compile(r"(?P<tag>[A-Za-z_][A-Za-z0-9_]*)\[(?P<k>[0-9]+)\]")


def indexed(name: str) -> tuple[str, int] | None:
    """``"a[3]"`` -> ``("a", 3)``; None for a plain name."""
    m = _INDEXED.fullmatch(name)
    return (m["tag"], int(m["k"])) if m else None


def index_name(tag: str, k: int) -> str:
    """The head of an indexed name: ``index_name("a", 3) == "a[3]"``."""
    return f"{tag}[{k}]"


@dataclass(frozen=True)
class RepeatedTag:
    """A tag inside a repetition: the event type it tags and the most events it can collect
    (``[2] ([3] a=A)``: 6; None when unbounded: ``a=A until B``, ``[2:] a=A until B``)."""

    alias: str
    type: str
    most: int | None
    loc: ast.Loc = None


def _times(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a * b


def repeated_tags(body: ast.Pattern) -> dict[str, RepeatedTag]:
    """The tags of ``body`` that stand inside a repetition, by alias."""
    out: dict[str, RepeatedTag] = {}

    def visit(node: ast.Pattern, most: int | None, repeated: bool) -> None:
        if isinstance(node, ast.Atom):
            if node.alias is not None and repeated:
                out[node.alias] = RepeatedTag(node.alias, node.name, most, node.loc)
        elif isinstance(node, ast.Until):
            visit(node.pattern, _times(most, node.high), True)
            visit(node.until, most, repeated)
        elif isinstance(node, ast.Mult):
            count = node.count if isinstance(node.count, int) else None
            visit(node.pattern, _times(most, count), True)
        else:
            for child in pattern_children(node):
                visit(child, most, repeated)

    visit(body, 1, False)
    return out


@dataclass(frozen=True)
class Misuse:
    """A wrong use of a tag or an index, where it is written (``severity`` "warning" for a
    use that is valid but always null)."""

    loc: ast.Loc
    message: str
    severity: str = "error"


def _repetition_operand(node: ast.Pattern) -> ast.Pattern | None:
    if isinstance(node, ast.Mult):
        return node.pattern
    if isinstance(node, ast.Until):
        return node.pattern
    return None


def misuses(decl: ast.ComplexEventDecl) -> Iterator[Misuse]:
    """Every wrong use of a tag as an array (or of an index) in ``decl``, located (see the
    module docstring): in the filters of its pattern, its select list and every-distinct keys."""
    repeated = repeated_tags(decl.body)

    def check(expr: ast.Expr, inside: frozenset[str], where: ast.Loc) -> Iterator[Misuse]:
        for n in names(expr):
            loc = n.loc or where
            text = ".".join((n.name, *n.path))
            ix = indexed(n.name)
            if ix is None:
                if n.name in repeated and n.name not in inside:
                    most = repeated[n.name].most
                    first = f"{n.name}[0].{n.path[0] if n.path else '<field>'}"
                    hint = (f"{first} … {n.name}[{most - 1}].{n.path[0]}" if n.path and most
                            else first)
                    yield Misuse(loc, f"'{text}': '{n.name}' tags the events of a repetition "
                                 f"and is an array after it; index it: {hint}")
                continue
            tag, k = ix
            most = repeated[tag].most if tag in repeated else None
            if tag not in repeated:
                yield Misuse(loc, f"'{text}': '{tag}' is not a tag inside a repetition ([n] … "
                             "or … until …), so it holds one event, not an array; write "
                             f"{tag}.<field>")
            elif tag in inside:
                yield Misuse(loc, f"'{text}': inside the repetition that collects '{tag}' the "
                             f"tag is the current event; write {tag}.<field> (Esper does not "
                             "allow the indexed form there)")
            elif not n.path:
                yield Misuse(loc, f"'{text}' is a whole event; select or compare its fields: "
                             f"{text}.<field>")
            elif most is not None and k >= most:
                yield Misuse(loc, f"'{text}' is always null: the repetition collects at most "
                             f"{most} '{tag}' event(s), {tag}[0] … {tag}[{most - 1}]",
                             "warning")

    def visit(node: ast.Pattern, inside: frozenset[str]) -> Iterator[Misuse]:
        if isinstance(node, ast.Atom):
            if node.where is not None:
                own = inside | ({node.alias} if node.alias in repeated else set())
                yield from check(node.where, frozenset(own), node.loc)
            return
        if isinstance(node, ast.Every):
            for d in node.distinct:
                yield from check(d, inside, node.loc)
        operand = _repetition_operand(node)
        for child in pattern_children(node):
            scope = inside
            if child is operand:
                scope = inside | {a.alias for a in atoms(child) if a.alias in repeated}
            yield from visit(child, scope)

    yield from visit(decl.body, frozenset())
    for _, e in decl.select or ():
        yield from check(e, frozenset(), decl.loc)
