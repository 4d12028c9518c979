"""The compiled form of graph queries: normalised bodies over relations.

A body is a conjunction of *atoms* over relations (instances of a class, the edges of a
reference, the values of an attribute, the values of a history function, the matches of
another pattern), *negative atoms* (no match of a pattern agrees on some positions) and
*filters* (checks and comparisons). A pattern's matches are the projections onto its
parameters of the variable assignments that satisfy every body's conjunction, united over
its bodies. Both evaluators — incremental (:mod:`cepflow.queries.incremental`) and naive
(:mod:`cepflow.queries.naive`) — run exactly this form.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cepflow.models.metamodel import Metamodel
from cepflow.queries.functions import FunctionRegistry

Loc = tuple[int, int] | None


# ---------------------------------------------------------------- relations


@dataclass(frozen=True)
class TypeRel:
    """Unary: the instances of ``cls`` and of its subclasses."""

    cls: str


@dataclass(frozen=True)
class RefRel:
    """Binary (source, target): the edges of reference ``feature`` declared by ``owner``."""

    owner: str
    feature: str


@dataclass(frozen=True)
class AttrRel:
    """Binary (object, value): attribute ``feature`` of the instances of ``owner`` (the class
    the constraint names, which declares or inherits the attribute)."""

    owner: str
    feature: str


@dataclass(frozen=True)
class HistoryRel:
    """Binary (object, value): history function ``function(attr, *args)`` of an attribute."""

    function: str
    args: tuple[Any, ...]
    owner: str
    feature: str

    def __post_init__(self) -> None:
        # cached: a site keys the engine's dictionaries once per changed value
        object.__setattr__(self, "_hash", hash((self.function, self.args, self.owner,
                                                self.feature)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined, no-any-return]


@dataclass(frozen=True)
class ConstRel:
    """Unary, constant: the single value ``value`` (what ``X == 3`` binds X to)."""

    value: Any


@dataclass(frozen=True)
class MatchRel:
    """n-ary: the matches of pattern ``pattern``."""

    pattern: str


RelKey = TypeRel | RefRel | AttrRel | HistoryRel | ConstRel | MatchRel


# ---------------------------------------------------------------- body elements


@dataclass(frozen=True)
class ConstArg:
    """A constant argument."""

    value: Any


#: An argument: a variable name or a constant.
Arg = str | ConstArg


@dataclass(frozen=True)
class RelAtom:
    """``rel(args)``. ``columns`` gives, per position, the class its values are instances of
    (None for plain values): an atom implies the type constraints of its columns."""

    rel: RelKey
    args: tuple[Arg, ...]
    columns: tuple[str | None, ...]
    loc: Loc = field(default=None, compare=False)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(a for a in self.args if isinstance(a, str))


@dataclass(frozen=True)
class NegAtom:
    """``neg find pattern(...)``: no match of ``pattern`` has ``args`` at ``positions`` (the
    other positions are existential)."""

    pattern: str
    positions: tuple[int, ...]
    args: tuple[Arg, ...]
    loc: Loc = field(default=None, compare=False)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(a for a in self.args if isinstance(a, str))


@dataclass(frozen=True, eq=False)
class Check:
    """``check(expr)`` over the values of ``variables``. ``text`` is for messages."""

    evaluate: Callable[[dict[str, Any]], Any]
    variables: tuple[str, ...]
    text: str
    loc: Loc = None
    #: ``at_slots(slots)`` compiles the condition once more, reading each variable from
    #: position ``slots[var]`` of a list (the join plans' slot array) instead of a dict
    at_slots: Callable[[dict[str, int]], Callable[[list[Any]], Any]] | None = field(
        default=None, repr=False)
    #: the condition's expression over the variables (history calls already variables): what
    #: the bulk path evaluates column-wise (:mod:`cepflow.queries.bulk`); None: per row only
    expr: Any = field(default=None, repr=False)

    def test(self, slots: dict[str, int]) -> Callable[[list[Any]], bool]:
        """``holds`` over a slot array: the join plans' form (no dict per evaluation)."""
        if self.at_slots is None:
            pairs = [(v, slots[v]) for v in self.variables]
            holds = self.holds
            return lambda env: holds({v: env[s] for v, s in pairs})
        at = self.at_slots(slots)

        def test(env: list[Any]) -> bool:
            try:
                return bool(at(env))
            except Exception:  # as in holds
                return False

        return test

    def holds(self, bindings: dict[str, Any]) -> bool:
        """True iff the condition evaluates to a true value. Decision: a registered function
        that raises makes the check false (as a null does), so one bad value cannot leave an
        incremental engine half-updated."""
        try:
            return bool(self.evaluate(bindings))
        except Exception:
            return False


@dataclass(frozen=True)
class Compare:
    """``left == right`` or ``left != right`` between bound variables and constants."""

    op: str
    left: Arg
    right: Arg
    loc: Loc = field(default=None, compare=False)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(a for a in (self.left, self.right) if isinstance(a, str))

    def holds(self, left: Any, right: Any) -> bool:
        return (left == right) == (self.op == "==")


Filter = Check | Compare


@dataclass(frozen=True)
class CompiledBody:
    """One body: ``params`` is the variable of each pattern parameter (unified parameters share
    one variable)."""

    params: tuple[str, ...]
    atoms: tuple[RelAtom, ...]
    negs: tuple[NegAtom, ...]
    filters: tuple[Filter, ...]


@dataclass(frozen=True)
class Query:
    """A compiled pattern. ``param_types`` holds a class name, a primitive type name or None
    (unknown) per parameter."""

    name: str
    params: tuple[str, ...]
    param_types: tuple[str | None, ...]
    bodies: tuple[CompiledBody, ...]
    private: bool = False
    loc: Loc = None

    def dependencies(self) -> set[str]:
        """Patterns this one calls (find and neg find)."""
        out = {a.rel.pattern for b in self.bodies for a in b.atoms if isinstance(a.rel, MatchRel)}
        return out | {n.pattern for b in self.bodies for n in b.negs}


@dataclass(frozen=True)
class QuerySet:
    """Compiled patterns in declaration order; ``order`` lists their names in dependency order
    (every pattern after the ones it calls)."""

    metamodel: Metamodel
    queries: dict[str, Query]
    functions: FunctionRegistry
    order: tuple[str, ...]
    source: str = "<string>"

    def __getitem__(self, name: str) -> Query:
        try:
            return self.queries[name]
        except KeyError:
            raise KeyError(f"no query '{name}' (queries: {', '.join(self.queries)})") from None

    def __iter__(self) -> Iterator[Query]:
        return iter(self.queries.values())

    def __len__(self) -> int:
        return len(self.queries)

    def history_sites(self) -> set[HistoryRel]:
        """Every history function application used by some query."""
        return {a.rel for q in self for b in q.bodies for a in b.atoms
                if isinstance(a.rel, HistoryRel)}
