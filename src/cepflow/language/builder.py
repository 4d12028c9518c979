"""Build pattern ASTs in Python, as an alternative to writing pattern files.

The builder produces exactly the nodes the parser produces for the same pattern::

    from cepflow.language.builder import event, seq, complex_event

    body = (event("A", "x") >> event("B", "x").where("speed > 0")).within(s=3)
    ce = complex_event("AB", ["x"], body)           # == parse("complexEvent AB(x : any) ...")

Pattern expressions are wrapped in :class:`P` so Python operators work on them:
``a >> b`` is followed-by (``->``), ``a | b`` is ``OR``, ``a & b`` is ``AND`` and ``~a`` is
``NOT``. Declaration helpers unwrap them, so declarations hold plain ``ast`` nodes; ``.node``
unwraps by hand. Like the parser, ``a >> b >> c`` is ``Fol(a, Fol(b, c))`` (Python's ``>>`` is
left-associative, so the builder re-associates a chain of ``>>`` to the right; an operand that
is itself a sequence, such as ``seq(a, b) >> c``, stays one element: ``Fol(Fol(a, b), c)``),
while ``|`` and ``&`` chains stay left-associative as in the parser.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from decimal import Decimal
from typing import Any

from cepflow.language.ast import (
    CONTEXTS,
    And,
    Atom,
    AtomicEventDecl,
    ComplexEventDecl,
    Count,
    Decl,
    Expr,
    Fol,
    Module,
    Mult,
    Not,
    Or,
    Param,
    Pattern,
    PatternRef,
    QueryEventDecl,
    RuleDecl,
    Trait,
    Window,
)
from cepflow.language.parser import TIME_UNITS, parse_expr

__all__ = [
    "P",
    "all_of",
    "any_of",
    "atomic_event",
    "complex_event",
    "duration_ms",
    "event",
    "module",
    "param",
    "query_event",
    "rule",
    "seq",
    "trait",
    "unwrap",
]


class P:
    """A pattern expression with Python operators; ``.node`` is the plain ``ast`` node."""

    __slots__ = ("_spine", "node")

    def __init__(self, node: Pattern, _spine: int = 0) -> None:
        self.node: Pattern = node
        # number of Fol nodes made by `>>` along the right spine (for re-association)
        self._spine = _spine

    # ------------------------------------------------------------ binary operators

    def __rshift__(self, other: Any) -> P:
        right = unwrap(other)
        if self._spine:
            return P(_append(self.node, right, self._spine), self._spine + 1)
        return P(Fol(self.node, right), 1)

    def __rrshift__(self, other: Any) -> P:
        return P(Fol(unwrap(other), self.node), 1)

    def __or__(self, other: Any) -> P:
        return P(Or(self.node, unwrap(other)))

    def __ror__(self, other: Any) -> P:
        return P(Or(unwrap(other), self.node))

    def __and__(self, other: Any) -> P:
        return P(And(self.node, unwrap(other)))

    def __rand__(self, other: Any) -> P:
        return P(And(unwrap(other), self.node))

    def __invert__(self) -> P:
        return P(Not(self.node))

    # ------------------------------------------------------------ unary operators

    def times(self, n: int) -> P:
        """Exactly ``n`` occurrences: ``A{n}``."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ValueError(f"multiplicity must be a whole number >= 0, not {n!r}")
        return self._mult(n)

    def star(self) -> P:
        """Zero or more occurrences: ``A{*}``."""
        return self._mult("*")

    def plus(self) -> P:
        """One or more occurrences: ``A{+}``."""
        return self._mult("+")

    def _mult(self, count: Count) -> P:
        return P(Mult(self.node, count))

    def within(self, ms: float = 0, s: float = 0, min: float = 0, h: float = 0, d: float = 0) -> P:
        """Time window: the whole match spans at most the given time (``[3 s]``)."""
        return P(Window(self.node, duration_ms(ms=ms, s=s, min=min, h=h, d=d), "within"))

    def holds_for(
        self, ms: float = 0, s: float = 0, min: float = 0, h: float = 0, d: float = 0
    ) -> P:
        """Time window: the match spans at least the given time (``holds-for 2 s``)."""
        return P(Window(self.node, duration_ms(ms=ms, s=s, min=min, h=h, d=d), "holds_for"))

    def where(self, condition: str | Expr) -> P:
        """Filter an atom on its own fields: a condition text (parsed) or an ``Expr`` node."""
        if not isinstance(self.node, Atom):
            raise TypeError("where() filters a single event reference, not a compound pattern")
        cond = parse_expr(condition) if isinstance(condition, str) else condition
        atom = self.node
        return P(Atom(atom.name, atom.args, cond, atom.loc))

    # ------------------------------------------------------------ comparison

    def __eq__(self, other: object) -> bool:
        if isinstance(other, P):
            return self.node == other.node
        return self.node == other

    def __hash__(self) -> int:
        return hash(self.node)

    def __repr__(self) -> str:
        return f"P({self.node!r})"


def unwrap(value: P | Pattern | str) -> Pattern:
    """The ``ast`` node behind a builder value; a bare string is an event name (``A``)."""
    if isinstance(value, P):
        return value.node
    if isinstance(value, str):
        return Atom(value)
    if isinstance(value, Atom | Fol | Or | And | Mult | Not | Window):
        return value
    raise TypeError(f"not a pattern: {value!r}")


def _append(chain: Pattern, last: Pattern, depth: int) -> Pattern:
    """Add ``last`` at the end of a ``>>`` chain ``depth`` Fol nodes deep (right-nested)."""
    if depth == 0:
        return Fol(chain, last)
    assert isinstance(chain, Fol)
    return Fol(chain.left, _append(chain.right, last, depth - 1))


def duration_ms(ms: float = 0, s: float = 0, min: float = 0, h: float = 0, d: float = 0) -> float:
    """Sum of the given amounts in milliseconds, computed exactly like the parser does."""
    total = Decimal(0)
    for amount, unit in ((ms, "ms"), (s, "s"), (min, "min"), (h, "h"), (d, "d")):
        if amount:
            total += Decimal(repr(amount)) * TIME_UNITS[unit]
    if total < 0:
        raise ValueError("a window duration must not be negative")
    return float(total)


# ---------------------------------------------------------------- pattern helpers


def event(
    name: str,
    *args: str | None,
    call_args: Sequence[str | None] | None = None,
    where: str | Expr | None = None,
) -> P:
    """Reference an event pattern: ``event("A", "x", "_")`` is ``A(x, _)``.

    Without arguments the reference has ``args=None`` (``A``); pass ``call_args=()`` for
    ``A()``. ``None`` arguments are written ``_`` (a wildcard), as the parser keeps them.
    """
    if args:
        listed: tuple[str, ...] | None = tuple("_" if a is None else a for a in args)
    elif call_args is not None:
        listed = tuple("_" if a is None else a for a in call_args)
    else:
        listed = None
    ref = P(Atom(name, listed))
    return ref.where(where) if where is not None else ref


def seq(*parts: P | Pattern | str) -> P:
    """Followed-by chain ``a -> b -> c``, right-associated: ``Fol(a, Fol(b, c))``."""
    nodes = _nodes(parts, "seq")
    result = nodes[-1]
    for node in reversed(nodes[:-1]):
        result = Fol(node, result)
    return P(result)


def any_of(*parts: P | Pattern | str) -> P:
    """``a OR b OR c``, left-associated: ``Or(Or(a, b), c)``."""
    nodes = _nodes(parts, "any_of")
    result = nodes[0]
    for node in nodes[1:]:
        result = Or(result, node)
    return P(result)


def all_of(*parts: P | Pattern | str) -> P:
    """``a AND b AND c``, left-associated: ``And(And(a, b), c)``."""
    nodes = _nodes(parts, "all_of")
    result = nodes[0]
    for node in nodes[1:]:
        result = And(result, node)
    return P(result)


def _nodes(parts: Iterable[P | Pattern | str], what: str) -> list[Pattern]:
    nodes = [unwrap(p) for p in parts]
    if not nodes:
        raise ValueError(f"{what}() needs at least one pattern")
    return nodes


# ---------------------------------------------------------------- declarations


def param(spec: str | tuple[str, str] | Param) -> Param:
    """A formal parameter from ``"x"`` (type ``any``), ``("x", "Integer")`` or a ``Param``."""
    if isinstance(spec, Param):
        return spec
    if isinstance(spec, str):
        return Param(spec)
    name, type_ = spec
    return Param(name, type_)


def _params(specs: Iterable[str | tuple[str, str] | Param]) -> tuple[Param, ...]:
    return tuple(param(s) for s in specs)


def trait(name: str, *params: str | tuple[str, str] | Param) -> Trait:
    """``trait Name { p : T, ... }``."""
    return Trait(name, _params(params))


def atomic_event(
    name: str, *params: str | tuple[str, str] | Param, traits: Sequence[str] = ()
) -> AtomicEventDecl:
    """``atomicEvent Name(params) with traits``."""
    return AtomicEventDecl(name, _params(params), tuple(traits))


def query_event(
    name: str,
    params: Sequence[str | tuple[str, str] | Param],
    query: str,
    query_args: Sequence[str | None] | None = None,
    change: str = "found",
) -> QueryEventDecl:
    """``queryEvent Name(params) as query(args) found|lost``."""
    if change not in ("found", "lost"):
        raise ValueError(f"change must be 'found' or 'lost', not {change!r}")
    args = None if query_args is None else tuple("_" if a is None else a for a in query_args)
    return QueryEventDecl(name, _params(params), query, args, change)  # type: ignore[arg-type]


def complex_event(
    name: str,
    params: Sequence[str | tuple[str, str] | Param],
    body: P | Pattern | str,
    context: str | None = None,
    partition_by: Sequence[str] = (),
    priority: int = 0,
) -> ComplexEventDecl:
    """``complexEvent Name(params) { as body [context c] [partition by k, ...]
    [priority n] }``."""
    if context is not None and context not in CONTEXTS:
        raise ValueError(f"unknown event processing context {context!r}")
    return ComplexEventDecl(
        name,
        _params(params),
        unwrap(body),
        context,
        tuple(partition_by),  # type: ignore[arg-type]
        priority=int(priority),
    )


def _ref(value: P | Pattern | PatternRef | str) -> PatternRef:
    if isinstance(value, PatternRef):
        return value
    node = unwrap(value)
    if not isinstance(node, Atom) or node.where is not None:
        raise TypeError(f"a rule is triggered by event references, not {node!r}")
    return PatternRef(node.name, node.args)


def rule(
    name: str,
    on: P | Pattern | PatternRef | str | Sequence[P | Pattern | PatternRef | str],
    action: str | None,
    priority: int = 0,
) -> RuleDecl:
    """``rule Name on P, ... [priority n] action registered.name``."""
    triggers = [on] if isinstance(on, P | PatternRef | str | Atom) else list(on)  # type: ignore[list-item]
    if not triggers:
        raise ValueError("a rule needs at least one triggering pattern")
    return RuleDecl(name, tuple(_ref(t) for t in triggers), action, int(priority))


def module(
    *decls: Decl,
    context: str | None = None,
    package: str | None = None,
    imports: Sequence[str] = (),
    source: str = "<builder>",
) -> Module:
    """A module of declarations, with an optional engine-wide default context."""
    if context is not None and context not in CONTEXTS:
        raise ValueError(f"unknown event processing context {context!r}")
    return Module(tuple(decls), package, tuple(imports), context, source)  # type: ignore[arg-type]
