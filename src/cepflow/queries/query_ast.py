"""The abstract syntax of graph query files, as the parser produces it (before name resolution).

A file is a list of patterns; a pattern has typed parameters and one or more bodies (``or``);
a body is a conjunction of constraints. ``check`` conditions are
:mod:`cepflow.language.ast` expressions, evaluated by cepflow's own evaluator. ``loc`` (line,
column) is kept for diagnostics and ignored by equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from cepflow.language import ast as expr_ast

Loc = tuple[int, int] | None


@dataclass(frozen=True)
class Var:
    """A pattern variable. ``_`` and names starting with ``_`` are anonymous (each occurrence is
    a fresh variable)."""

    name: str
    loc: Loc = field(default=None, compare=False, repr=False)

    @property
    def anonymous(self) -> bool:
        return self.name.startswith("_")


@dataclass(frozen=True)
class Literal_:
    """A constant: int, float, str or bool."""

    value: Any
    loc: Loc = field(default=None, compare=False, repr=False)


Term = Var | Literal_


@dataclass(frozen=True)
class TypeConstraint:
    """``Host(H)``: H is an instance of Host (or of a subclass)."""

    cls: str
    arg: Term
    loc: Loc = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PathConstraint:
    """``Host.totalCpu(H, C)`` / ``Host.applications(H, A)``: a feature of class ``cls``."""

    cls: str
    feature: str
    source: Term
    target: Term
    loc: Loc = field(default=None, compare=False, repr=False)
    feature_loc: Loc = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class FindConstraint:
    """``find p(X, _)`` or, with ``negative``, ``neg find p(X, _)``."""

    pattern: str
    args: tuple[Term, ...]
    negative: bool = False
    loc: Loc = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class CheckConstraint:
    """``check(expr)``: the expression over bound variables must be true."""

    expr: expr_ast.Expr
    loc: Loc = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class CompareConstraint:
    """``X == Y`` (unification), ``X != Y``, ``X == 3``."""

    op: Literal["==", "!="]
    left: Term
    right: Term
    loc: Loc = field(default=None, compare=False, repr=False)


Constraint = TypeConstraint | PathConstraint | FindConstraint | CheckConstraint | CompareConstraint


@dataclass(frozen=True)
class QueryParam:
    """A pattern parameter with an optional type (a class or a primitive type name)."""

    name: str
    type: str | None = None
    loc: Loc = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Body:
    constraints: tuple[Constraint, ...]
    loc: Loc = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class PatternDecl:
    name: str
    params: tuple[QueryParam, ...]
    bodies: tuple[Body, ...]
    private: bool = False
    loc: Loc = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class QueryFile:
    patterns: tuple[PatternDecl, ...]
    source: str = "<string>"
