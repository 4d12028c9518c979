"""Print ``ast`` nodes back as canonical cepflow pattern syntax.

The output uses the modern VEPL forms plus the cepflow extensions, and is made so that
``parse(format_module(m)) == m`` for every module the parser can produce (equality ignores
``loc``): parentheses are added wherever the grammar would otherwise group differently,
window lengths are printed exactly (``[500 ms]``, ``[3 s]``, ``holds-for 1.5 ms``) and names
that are keywords are escaped with ``^``.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any

from cepflow.language.ast import (
    And,
    At,
    Atom,
    AtomicEventDecl,
    Binary,
    Call,
    ComplexEventDecl,
    Const,
    Decl,
    Every,
    Expr,
    Fol,
    Interval,
    Module,
    Mult,
    Name,
    Not,
    Or,
    Param,
    Pattern,
    PatternRef,
    QueryEventDecl,
    RuleDecl,
    Trait,
    Unary,
    Until,
    Window,
    WindowDecl,
)
from cepflow.language.parser import RESERVED_WORDS
from cepflow.language.tags import indexed
from cepflow.language.walk import rewrite

__all__ = ["column_name", "format_decl", "format_duration", "format_expr", "format_module",
           "format_pattern"]

_ID_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Names printed with a ``^`` escape: reserved words, and the words the parser would read as
#: keywords where a name may also stand (operands of conditions; ``holds_for`` after a primary).
RESERVED = RESERVED_WORDS | {"not", "true", "false", "null", "holds_for", "every", "UNTIL"}

_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000))

_INDENT = "\t"


# ---------------------------------------------------------------- names and numbers


def _ident(name: str) -> str:
    """A name as written in source, ``^``-escaped if it is a keyword."""
    if not isinstance(name, str) or not _ID_RE.fullmatch(name):
        raise ValueError(f"not a valid identifier: {name!r}")
    return f"^{name}" if name in RESERVED else name


def _qname(name: str) -> str:
    parts = name.split(".")
    last = len(parts) - 1
    return ".".join(p if p == "*" and i == last else _ident(p) for i, p in enumerate(parts))


def _arg(arg: str | None) -> str:
    return "_" if arg is None else _ident(arg)


def _decimal(value: float | int) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"number {value!r} cannot be written in a pattern file")
    return Decimal(value) if isinstance(value, int) else Decimal(repr(value))


def _plain(number: Decimal) -> str:
    """A decimal without exponent or trailing zeros (``3``, ``1.5``, ``0.0001``)."""
    if number == number.to_integral_value():
        return str(int(number))
    return format(number.normalize(), "f")


def format_duration(ms: float) -> str:
    """Window length in the largest unit that divides it exactly: ``3 s``, ``1500 ms``."""
    number = _decimal(ms)
    if number < 0:
        raise ValueError(f"window duration must not be negative: {ms!r}")
    for unit, factor in _UNITS:
        quotient = number / factor
        if number and quotient == quotient.to_integral_value():
            return f"{int(quotient)} {unit}"
    return f"{_plain(number)} ms"


# ---------------------------------------------------------------- filter conditions

_BINARY_PREC = {
    "or": 1,
    "and": 2,
    "==": 4,
    "!=": 4,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
    "%": 6,
}
_NOT_PREC = 3
_CMP_PREC = 4
_NEG_PREC = 7
_ATOM_PREC = 8

_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _quote(text: str) -> str:
    out = []
    for ch in text:
        if ch in _STRING_ESCAPES:
            out.append(_STRING_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _const(value: Any) -> tuple[str, int]:
    if value is None:
        return "null", _ATOM_PREC
    if isinstance(value, bool):
        return ("true" if value else "false"), _ATOM_PREC
    if isinstance(value, str):
        return _quote(value), _ATOM_PREC
    if isinstance(value, int):
        return str(value), (_NEG_PREC if value < 0 else _ATOM_PREC)
    if isinstance(value, float):
        _decimal(value)  # rejects inf / nan
        text = repr(value)
        return text, (_NEG_PREC if text.startswith("-") else _ATOM_PREC)
    raise ValueError(f"constant {value!r} cannot be written in a pattern file")


def _expr(node: Expr, eq: str = "==") -> tuple[str, int]:
    """Text and precedence level of a condition expression (``eq``: how equality is written;
    EPL writes ``=``)."""
    if isinstance(node, Const):
        return _const(node.value)
    if isinstance(node, Name):
        if node.name == "@ts" and not node.path:  # what current_timestamp() parses to
            return "current_timestamp()", _ATOM_PREC
        ix = indexed(node.name)
        head = _ident(node.name) if ix is None else f"{_ident(ix[0])}[{ix[1]}]"
        return ".".join((head, *(_ident(p) for p in node.path))), _ATOM_PREC
    if isinstance(node, Call):
        args = ", ".join(_expr(a, eq)[0] for a in node.args)
        return f"{_qname(node.func)}({args})", _ATOM_PREC
    if isinstance(node, Unary):
        if node.op == "not":
            text, prec = _expr(node.operand, eq)
            return f"not {_wrap(text, prec < _NOT_PREC)}", _NOT_PREC
        if node.op == "-":
            text, prec = _expr(node.operand, eq)
            # `-1` would be read back as the constant -1, so a negated literal keeps parens
            literal = isinstance(node.operand, Const) and not isinstance(node.operand.value, str)
            return f"-{_wrap(text, literal or prec < _NEG_PREC)}", _NEG_PREC
        raise ValueError(f"unknown unary operator {node.op!r}")
    if isinstance(node, Binary):
        prec = _BINARY_PREC.get(node.op)
        if prec is None:
            raise ValueError(f"unknown binary operator {node.op!r}")
        left, lp = _expr(node.left, eq)
        right, rp = _expr(node.right, eq)
        left_needs = lp <= prec if prec == _CMP_PREC else lp < prec
        op = eq if node.op == "==" else node.op
        return f"{_wrap(left, left_needs)} {op} {_wrap(right, rp <= prec)}", prec
    raise TypeError(f"not a condition expression: {node!r}")


def _wrap(text: str, needed: bool) -> str:
    return f"({text})" if needed else text


def format_expr(node: Expr, eq: str = "==") -> str:
    """A filter condition in canonical syntax (lower-case ``and``/``or``/``not``); ``eq="="``
    writes equality as EPL does."""
    return _expr(node, eq)[0]


def column_name(node: Expr) -> str:
    """Esper's name for an unaliased select column: a field by its name, else the expression's
    text (``count(*)``, ``avg(temp)``). The checker and the window runtime both use it."""
    if isinstance(node, Name) and len(node.path) <= 1:
        return node.path[0] if node.path else node.name
    return format_expr(_star_count(node)).replace("count()", "count(*)")


def _star_count(node: Expr) -> Expr:
    """``node`` with ``count(*)`` in either form as ``count()`` (``*`` is not printable):
    ``count(*)`` may arrive as ``Call("count", (Name("*"),))``."""

    def fn(e: Expr) -> Expr | None:
        arg = e.args[0] if isinstance(e, Call) and len(e.args) == 1 else None
        if isinstance(e, Call) and e.func.lower() == "count" and isinstance(arg, Name) \
                and arg.name == "*" and not arg.path:
            return Call(e.func, (), e.loc)
        return None

    return rewrite(node, fn)


# ---------------------------------------------------------------- patterns

_OPS: dict[type, str] = {Fol: "->", Or: "OR", And: "AND"}


def _atom(node: Atom) -> str:
    text = _ident(node.name)
    if node.alias is not None:
        text = f"{_ident(node.alias)} = {text}"
    if node.args is not None:
        text += "(" + ", ".join(_arg(a) for a in node.args) + ")"
    if node.where is not None:
        cond, prec = _expr(node.where)
        # parenthesize and/or/not filters so the end of the condition is easy to see
        text += " where " + _wrap(cond, prec < _CMP_PREC)
    return text


def _count(count: Any) -> str:
    if count in ("*", "+"):
        return str(count)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"multiplicity must be '*', '+' or a whole number >= 0: {count!r}")
    return str(count)


def _base(node: Pattern) -> tuple[str, bool]:
    """A node written where multiplicity may follow; True if it ends with a `where` filter."""
    if isinstance(node, Atom):
        return _atom(node), node.where is not None
    return f"({_pattern(node)})", False


def _sep(ends_with_filter: bool) -> str:
    return " " if ends_with_filter else ""


def _normal_primary(node: Pattern) -> str:
    """A node written as ``(atom | '(' pattern ')') multiplicity? window?``."""
    if isinstance(node, Atom):
        return _atom(node)
    if isinstance(node, Mult):
        base, filtered = _base(node.pattern)
        return f"{base}{_sep(filtered)}{{{_count(node.count)}}}"
    if isinstance(node, Window):
        inner = node.pattern
        if isinstance(inner, Mult):
            base = _normal_primary(inner)
            filtered = False
        else:
            base, filtered = _base(inner)
        length = format_duration(node.duration)
        if node.kind == "within":
            return f"{base}{_sep(filtered)}[{length}]"
        if node.kind == "holds_for":
            return f"{base} holds-for {length}"
        raise ValueError(f"unknown window kind {node.kind!r}")
    return f"({_pattern(node)})"


def _range(node: Until) -> str:
    """``{low..high}`` of a repeat-until: ``{n}`` when tight, ``{*}`` when unbounded."""
    low, high = node.low, node.high
    if low is None and high is None:
        return "{*}"
    if low == high:
        return f"{{{_count(low)}}}"
    lo = "" if low is None else _count(low)
    hi = "" if high is None else _count(high)
    return f"{{{lo}..{hi}}}"


def _operand(node: Pattern) -> str:
    """A node written as a primary of a binary chain."""
    if isinstance(node, Interval):
        return f"timer:interval({format_duration(node.duration)})"
    if isinstance(node, At):  # (read from EPL only: shown as Esper writes it)
        return f"timer:at({node.schedule.text()})"
    if isinstance(node, Until):
        base, filtered = _base(node.pattern)
        return f"{base}{_sep(filtered)}{_range(node)} UNTIL {_normal_primary(node.until)}"
    if isinstance(node, Not):
        return f"NOT {_normal_primary(node.pattern)}"
    if isinstance(node, Every):
        head = "every"
        if node.distinct or node.expiry is not None:
            keys = ", ".join(_expr(k)[0] for k in node.distinct)
            if node.expiry is not None:
                keys += f"; {format_duration(node.expiry)}"
            head = f"every-distinct({keys})"
        return f"{head} {_normal_primary(node.pattern)}"
    if type(node) in _OPS:
        return f"({_pattern(node)})"
    return _normal_primary(node)


def _pattern(node: Pattern) -> str:
    op = _OPS.get(type(node))
    if op is None:
        return _operand(node)
    assert isinstance(node, Fol | Or | And)
    left, right = node.left, node.right
    if isinstance(node, Fol):  # right-associative: a -> (b -> c) needs no parentheses
        left_text = _operand(left)
        right_text = _pattern(right) if isinstance(right, Fol) else _operand(right)
    else:  # left-associative
        left_text = _pattern(left) if type(left) is type(node) else _operand(left)
        right_text = _operand(right)
    return f"{left_text} {op} {right_text}"


def format_pattern(node: Pattern) -> str:
    """A pattern expression in canonical syntax, parenthesized only where needed."""
    return _pattern(node)


# ---------------------------------------------------------------- declarations


def _type(type_: str) -> str:
    """A declared type: a qualified name (escaped) or a generic/array type as written."""
    if re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", type_):
        return _qname(type_)
    return type_


def _params(params: tuple[Param, ...]) -> str:
    return ", ".join(f"{_ident(p.name)} : {_type(p.type)}" for p in params)


def _ref(ref: PatternRef) -> str:
    text = _ident(ref.name)
    if ref.args is not None:
        text += "(" + ", ".join(_arg(a) for a in ref.args) + ")"
    return text


def format_decl(decl: Decl) -> str:
    """One declaration in canonical syntax (may span several lines)."""
    if isinstance(decl, Trait):
        return f"trait {_ident(decl.name)} {{ {_params(decl.params)} }}"
    if isinstance(decl, AtomicEventDecl):
        text = f"atomicEvent {_ident(decl.name)}"
        if decl.params:
            text += f"({_params(decl.params)})"
        if decl.traits:
            text += " with " + ", ".join(_ident(t) for t in decl.traits)
        return text
    if isinstance(decl, QueryEventDecl):
        text = f"queryEvent {_ident(decl.name)}({_params(decl.params)}) as {_qname(decl.query)}"
        if decl.query_args is not None:
            text += "(" + ", ".join(_arg(a) for a in decl.query_args) + ")"
        return f"{text} {decl.change}"
    if isinstance(decl, ComplexEventDecl):
        lines = [
            f"complexEvent {_ident(decl.name)}({_params(decl.params)}) {{",
            f"{_INDENT}as {format_pattern(decl.body)}",
        ]
        if decl.context is not None:
            lines.append(f"{_INDENT}context {decl.context}")
        if decl.priority:
            lines.append(f"{_INDENT}priority {int(decl.priority)}")
        if decl.partition_by:
            keys = ", ".join(_ident(p) for p in decl.partition_by)
            lines.append(f"{_INDENT}partition by {keys}")
        if decl.select is not None:
            items = ", ".join(f"{_expr(e)[0]} as {_ident(n)}" for n, e in decl.select)
            lines.append(f"{_INDENT}select {items}")
        lines.append("}")
        return "\n".join(lines)
    if isinstance(decl, WindowDecl):
        return _window_decl(decl)
    if isinstance(decl, RuleDecl):
        text = f"rule {_ident(decl.name)} on " + ", ".join(_ref(r) for r in decl.on)
        if decl.priority:
            text += f" priority {int(decl.priority)}"
        if decl.action is not None:
            text += f" action {_qname(decl.action)}"
        if decl.opaque_action is not None:
            block = decl.opaque_action.strip()
            if not block.startswith("{"):
                block = "{ " + block + " }"
            text += " " + block
        return text
    raise TypeError(f"not a declaration: {decl!r}")


def _window_decl(decl: WindowDecl) -> str:
    """``complexEvent X { from a = T where … window kind(size) select … group by … }``."""
    w = decl.window
    if w.kind in ("time", "time_batch"):
        size = format_duration(w.size)
    else:
        size = _count(w.size if isinstance(w.size, int) else int(w.size))
    window = f"window {w.kind}({size})" + (" per group" if w.per_group else "")
    items = ", ".join(_expr(e)[0] + ("" if n is None else f" as {_ident(n)}")
                      for n, e in decl.select)
    src = decl.source
    if decl.more_inputs:  # a union: from g = A | B where …
        head = f"{_ident(src.alias)} = " if src.alias is not None else ""
        names = " | ".join(_ident(n) for n in (src.name, *decl.more_inputs))
        source = head + names + (_atom(Atom(src.name, src.args, src.where))[len(
            _ident(src.name)):])
    else:
        source = _atom(src)
    lines = [f"complexEvent {_ident(decl.name)} {{",
             f"{_INDENT}from {source} {window}",
             f"{_INDENT}select {items}"]
    if decl.group_by:
        lines.append(f"{_INDENT}group by " + ", ".join(_expr(g)[0] for g in decl.group_by))
    if decl.having is not None:
        lines.append(f"{_INDENT}having {_expr(decl.having)[0]}")
    if decl.priority:
        lines.append(f"{_INDENT}priority {int(decl.priority)}")
    lines.append("}")
    return "\n".join(lines)


def format_module(module: Module) -> str:
    """A whole pattern file in canonical syntax, ending with a newline."""
    header: list[str] = []
    if module.package:
        header.append(f"package {_qname(module.package)}")
    if module.imports:
        header.append("\n".join(f"import {_qname(i)}" for i in module.imports))
    if module.context is not None:
        header.append(f"context {module.context}")
    blocks = header + [format_decl(d) for d in module.decls]
    return "\n\n".join(blocks) + "\n"
