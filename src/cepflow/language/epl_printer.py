"""Print a module back as Esper EPL — the statement forms the EPL reader takes
(language/epl.py), so that ``parse_epl(format_epl(m)) == m`` for every module it reads.

The cepflow printer (language/printer.py) writes cepflow syntax, which says everything the
EPL reader produces but is not EPL; ``cepflow analyze --fix x.epl`` needs EPL back, so this
module writes it, sharing the printer's expressions (equality written ``=``). Only what EPL
can say is printed: input schemas, pattern statements of context ``esper`` (``insert into X
select … from pattern […]``) and window statements, with ``@Priority(n)``. Anything else —
VEPL parameters on atoms, other contexts, queries, rules, ``holds-for`` windows — raises
:class:`EplPrintError`, and so does a text the reader would not read back as the same module
(checked by reading it back). Comments are not kept: it is a pretty-printer.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import replace
from decimal import Decimal

from cepflow.compiler.normalize import fol_items
from cepflow.language import ast
from cepflow.language.printer import format_expr
from cepflow.language.walk import atoms

_TYPES = {"Integer": "int", "Long": "long", "Double": "double", "String": "string",
          "Boolean": "boolean"}
_UNITS = (("day", 86_400_000), ("hour", 3_600_000), ("min", 60_000), ("sec", 1000))


class EplPrintError(ValueError):
    """A module (or part of one) that EPL cannot say."""


def duration(ms: float) -> str:
    """A duration in the largest EPL unit that divides it: ``3 sec``, ``1 day``,
    ``1500 msec``."""
    value = Decimal(repr(float(ms)))
    for unit, factor in _UNITS:
        q = value / factor
        if value and q == q.to_integral_value():
            return f"{int(q)} {unit}"
    text = format(value.normalize(), "f")
    return f"{text} msec"


def _expr(e: ast.Expr) -> str:
    return format_expr(e, eq="=").replace("count()", "count(*)")


def _atom(a: ast.Atom) -> str:
    if a.args is not None:
        raise EplPrintError(f"'{a.name}({', '.join(x or '_' for x in a.args)})': EPL has no "
                            "positional parameters; use tags (a = Type) and conditions")
    head = f"{a.alias} = {a.name}" if a.alias else a.name
    return head + (f"({_expr(a.where)})" if a.where is not None else "")


def _single(p: ast.Pattern) -> bool:
    """A pattern the reader's guard rule treats as one event before a guard
    (compiler.esper.guard_windows: an atom, or every over one)."""
    return isinstance(p, ast.Atom) or (isinstance(p, ast.Every)
                                       and isinstance(p.pattern, ast.Atom))


#: the limits (Esper's ``-[n]>``) of the pattern being printed
_LIMITS: ContextVar[tuple[ast.Limit, ...]] = ContextVar("limits", default=())


def _arrow(left: ast.Pattern) -> str:
    """The arrow after ``left``: ``-[n]>`` when a limit's operand is what ``left`` ends with
    (its atoms' places, ast.Limit.before; the reader's guard rule nests ``X -> P`` in a
    window), else ``->``."""
    while isinstance(left, ast.Fol | ast.Window):
        left = fol_items(left)[-1] if isinstance(left, ast.Fol) else left.pattern
    here = {a.loc for a in atoms(left)}
    for lim in _LIMITS.get():
        if lim.before and set(lim.before) <= here:
            return f" -[{lim.most}]> "
    return " -> "


def _pattern(p: ast.Pattern) -> str:
    if isinstance(p, ast.Atom):
        return _atom(p)
    if isinstance(p, ast.Fol):
        items = fol_items(p)
        return "".join(_operand(i) + _arrow(i) for i in items[:-1]) + _operand(items[-1])
    if isinstance(p, ast.Or | ast.And):
        word = "or" if isinstance(p, ast.Or) else "and"
        left = _pattern(p.left) if type(p.left) is type(p) else _operand(p.left)
        return f"{left} {word} {_operand(p.right)}"
    return _operand(p)


def _operand(p: ast.Pattern) -> str:
    """``p`` where an operand of a binary operator stands (parenthesised unless unary)."""
    if isinstance(p, ast.Atom):
        return _atom(p)
    if isinstance(p, ast.Interval):
        return f"timer:interval({duration(p.duration)})"
    if isinstance(p, ast.At):
        return f"timer:at({p.schedule.text()})"
    if isinstance(p, ast.Not):
        return f"not {_unary(p.pattern)}"
    if isinstance(p, ast.Every):
        head = "every"
        if p.distinct or p.expiry is not None:
            keys = [_expr(k) for k in p.distinct]
            if p.expiry is not None:
                keys.append(duration(p.expiry))
            head = f"every-distinct({', '.join(keys)})"
        return f"{head} {_unary(p.pattern)}"
    if isinstance(p, ast.Mult):
        if not isinstance(p.count, int) or p.count < 1:
            raise EplPrintError(f"repetition {{{p.count}}}: EPL repeats a fixed number of "
                                "times ([n]) or until a pattern ([m:n] … until …)")
        return f"[{p.count}] {_unary(p.pattern)}"
    if isinstance(p, ast.Until):
        if p.low is None and p.high is None:
            rng = ""
        elif p.low == p.high:
            rng = f"[{p.low}] "
        else:
            rng = f"[{'' if p.low is None else p.low}:{'' if p.high is None else p.high}] "
        return f"({rng}{_unary(p.pattern)} until {_unary(p.until)})"
    if isinstance(p, ast.Window):
        if p.kind != "within":
            raise EplPrintError("holds-for has no EPL form")
        guard = (f"where timer:within({duration(p.duration)})" if p.most is None else
                 f"where timer:withinmax({duration(p.duration)}, {p.most})")
        inner = p.pattern
        if isinstance(inner, ast.Fol) and (_single(inner.left) or p.after):
            # the reader's guard rule: X -> (P where timer:within) is (X -> P)[Δ] (from the
            # end of X when X is not one event: ast.Window.after)
            return (f"({_operand(inner.left)}{_arrow(inner.left)}({_pattern(inner.right)}) "
                    f"{guard})")
        return f"(({_pattern(inner)}) {guard})"
    return f"({_pattern(p)})"


def _unary(p: ast.Pattern) -> str:
    """``p`` as the operand of a unary operator (every, not, [n]): a repetition binds
    looser than those in EPL, so it is parenthesised."""
    text = _operand(p)
    return f"({text})" if isinstance(p, ast.Mult) else text


def _annotations(d: ast.ComplexEventDecl | ast.WindowDecl) -> list[str]:
    return [f"@Priority({int(d.priority)})"] if d.priority else []


def _complex(d: ast.ComplexEventDecl, stream: str | None = None) -> str:
    if d.context not in (None, "esper") or d.partition_by:
        raise EplPrintError(f"'{d.name}': EPL patterns run under Esper's semantics; context "
                            f"{d.context} and partition by have no EPL form")
    if stream is None:
        lines = [*_annotations(d), f"insert into {d.name}"]
    else:  # one of several statements inserting into a stream a window statement reads
        lines = [*_annotations(d), f"@Name('{d.name}')", f"insert into {stream}"]
    if d.select is not None:
        lines.append("select " + ", ".join(f"{_expr(e)} as {n}" for n, e in d.select))
    token = _LIMITS.set(d.limits)
    try:
        lines.append(f"from pattern [{_pattern(d.body)}];")
    finally:
        _LIMITS.reset(token)
    return "\n".join(lines)


def _window(d: ast.WindowDecl, stream: str | None = None) -> str:
    src = d.source
    if stream is not None:
        src = ast.Atom(stream, src.args, src.where, src.alias, src.loc)
    w = d.window
    size = duration(w.size) if w.kind in ("time", "time_batch") else str(int(w.size))
    views = ""
    if w.per_group:
        views += f".std:groupwin({', '.join(_expr(g) for g in d.group_by)})"
    views += f".win:{w.kind}({size})"
    if src.alias:
        stream = f"pattern [every {_atom(src)}]{views}"
    else:
        stream = f"{_atom(src)}{views}"
    items = ", ".join(_expr(e) + ("" if n is None else f" as {n}") for n, e in d.select)
    lines = [*_annotations(d), f"insert into {d.name}", f"select {items}", f"from {stream}"]
    if d.group_by:
        lines.append("group by " + ", ".join(_expr(g) for g in d.group_by))
    if d.having is not None:
        lines.append(f"having {_expr(d.having)}")
    lines[-1] += ";"
    return "\n".join(lines)


def _schema(d: ast.AtomicEventDecl) -> str:
    if d.traits:
        raise EplPrintError(f"'{d.name}' uses traits, which EPL does not have")
    cols = ", ".join(f"{p.name} {_TYPES.get(p.type, p.type)}" for p in d.params)
    return f"create schema {d.name}({cols});"


def _union_streams(module: ast.Module) -> tuple[dict[str, str], dict[str, str]]:
    """(pattern -> the stream it inserts into, window statement -> the stream it reads) for
    window statements that read several types as one stream (EPL: several statements insert
    into it)."""
    member: dict[str, str] = {}
    reads: dict[str, str] = {}
    for d in module.decls:
        if isinstance(d, ast.WindowDecl) and d.more_inputs:
            stream = d.stream or f"{d.name}Input"
            reads[d.name] = stream
            for name in (d.source.name, *d.more_inputs):
                if member.setdefault(name, stream) != stream:
                    raise EplPrintError(f"'{name}' is read by two unions; EPL would insert it "
                                        "into two streams")
    for d in module.decls:
        uses = ([a.name for a in _atoms(d.body)] if isinstance(d, ast.ComplexEventDecl)
                else [d.source.name] if isinstance(d, ast.WindowDecl) and not d.more_inputs
                else [])
        for name in uses:
            if name in member:
                raise EplPrintError(f"'{name}' is read by '{d.name}' and inserted into the "
                                    f"stream {member[name]}: EPL has no name for it alone")
    return member, reads


def _atoms(p: ast.Pattern) -> list[ast.Atom]:
    return list(atoms(p))


def format_decl_epl(d: ast.Decl, stream: str | None = None) -> str:
    """One declaration as EPL (EplPrintError when EPL cannot say it); ``stream``: the stream
    a pattern inserts into, or a union window statement reads, when not its own name."""
    if isinstance(d, ast.AtomicEventDecl):
        return _schema(d)
    if isinstance(d, ast.ComplexEventDecl):
        return _complex(d, stream)
    if isinstance(d, ast.WindowDecl):
        return _window(d, stream)
    what = type(d).__name__.replace("Decl", "").lower()
    raise EplPrintError(f"'{d.name}': a {what} has no EPL form; write cepflow syntax")


def _flat(d: ast.Decl) -> ast.Decl:
    """``d`` with every followed-by chain nested one way (fol is associative: the reader nests
    to the left after its guard rule, the cepflow parser to the right)."""
    if not isinstance(d, ast.ComplexEventDecl):
        return d
    return replace(d, body=_nested(d.body))


def _nested(p: ast.Pattern) -> ast.Pattern:
    if isinstance(p, ast.Fol):
        items = [_nested(i) for i in fol_items(p)]
        out = items[-1]
        for it in reversed(items[:-1]):
            out = ast.Fol(it, out, p.loc)
        return out
    if isinstance(p, ast.Or | ast.And):
        return type(p)(_nested(p.left), _nested(p.right), p.loc)
    if isinstance(p, ast.Until):
        return replace(p, pattern=_nested(p.pattern), until=_nested(p.until))
    if isinstance(p, ast.Mult | ast.Not | ast.Window | ast.Every):
        return replace(p, pattern=_nested(p.pattern))
    return p


def format_epl(module: ast.Module) -> str:
    """A whole module as EPL text, checked by reading it back."""
    if module.context not in (None, "esper") or module.package or module.imports:
        raise EplPrintError("a module context, package or imports have no EPL form")
    member, reads = _union_streams(module)
    text = "\n\n".join(format_decl_epl(d, member.get(d.name) or reads.get(d.name))
                       for d in module.decls) + "\n"
    from cepflow.language.diagnostics import PatternSyntaxError
    from cepflow.language.epl import parse_epl

    try:
        back = parse_epl(text, module.source)
    except PatternSyntaxError as e:
        raise EplPrintError(f"the EPL written does not read back: {e}") from None
    if [_flat(d) for d in back.decls] != [_flat(d) for d in module.decls]:
        bad = next(d.name for d, b in zip(module.decls, back.decls, strict=False)
                   if _flat(d) != _flat(b))
        raise EplPrintError(f"'{bad}' has no EPL form that reads back as the same pattern; "
                            "write cepflow syntax")
    return text
